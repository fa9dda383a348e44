"""Installing the package (setup.py's build step, which `pip install ./python` runs)
records the checkout's build directory, so that the installed cfuser finds libcfuser.so
there with nothing in the environment, and ships the package's files."""
import os
import shutil
import subprocess
import sys

import pytest

import cfuser

PYTHON_DIR = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))


def test_an_installed_package_finds_the_recorded_build_dir(tmp_path):
    pytest.importorskip("setuptools", reason="setuptools is not installed")
    src = tmp_path / "src"  # a copy: building writes beside setup.py
    shutil.copytree(PYTHON_DIR, src, ignore=shutil.ignore_patterns("tests", "build", "*.egg-info", "__pycache__"))
    build_dir = tmp_path / "the-build"
    build_dir.mkdir()
    os.symlink(os.path.realpath(cfuser.library_path), build_dir / "libcfuser.so")
    env = dict(os.environ, CFUSER_BUILD_DIR=str(build_dir))
    r = subprocess.run([sys.executable, "setup.py", "-q", "build", "--build-base", str(tmp_path / "b"),
                        "--build-lib", str(tmp_path / "lib")], cwd=src, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    pkg = tmp_path / "lib" / "cfuser"
    assert (pkg / "_install_info.py").read_text().endswith(f"BUILD_DIR = {str(build_dir)!r}\n")
    assert sorted(p.name for p in pkg.iterdir()) == [
        "__init__.py", "_capi.py", "_dlpack.py", "_install_info.py", "_runner.py", "_tensor.py", "_torch_fast.py",
        "fusion_definition.py",
        "ops.py", "py.typed", "sched.py", "types.py"]
    env = {k: v for k, v in os.environ.items() if k not in ("CFUSER_LIBRARY", "CFUSER_BUILD_DIR", "PYTHONPATH")}
    r = subprocess.run([sys.executable, "-c", "import cfuser; print(cfuser.library_path)"], env=env,
                       cwd=tmp_path / "lib", capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(build_dir / "libcfuser.so")
