"""The package's type hints check with mypy (skipped, with the reason, where mypy is not
installed: Debian's python3-mypy)."""
import os
import subprocess
import sys

import pytest

PACKAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "cfuser")


def test_mypy_finds_no_issue():
    pytest.importorskip("mypy", reason="mypy is not installed (python3-mypy)")
    r = subprocess.run([sys.executable, "-m", "mypy", "--ignore-missing-imports", "--cache-dir=/dev/null",
                        PACKAGE], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("Success: no issues found in 9 source files")
