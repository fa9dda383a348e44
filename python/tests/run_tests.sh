#!/usr/bin/env bash
# Runs the Python frontend's tests (pytest) against a built libcfuser.so; ctest's
# `python_tests` calls it as: python/tests/run_tests.sh <path of libcfuser.so> [pytest args]
# ($CFUSER_PYTEST_DIR: another directory of tests, e.g. tests/conformance's run.sh).
# The interpreter is $CFUSER_PYTHON, else the first of python3 on PATH and /usr/bin/python3
# that has pytest and numpy. Without one it reports itself skipped (exit 77) with the reason.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
lib="${1:?usage: run_tests.sh <libcfuser.so> [pytest args]}"
shift
pick=""
for py in ${CFUSER_PYTHON:-} python3 /usr/bin/python3; do
  if command -v "$py" >/dev/null 2>&1 && "$py" -c "import pytest, numpy" >/dev/null 2>&1; then
    pick="$py"
    break
  fi
done
if [ -z "$pick" ]; then
  echo "skipped: no Python with pytest and numpy (install python3-pytest python3-numpy, or set CFUSER_PYTHON)"
  exit 77
fi
export CFUSER_LIBRARY="$lib" PYTHONPATH="$here/..${PYTHONPATH:+:$PYTHONPATH}" PYTHONDONTWRITEBYTECODE=1
exec "$pick" -m pytest -q -p no:cacheprovider -rs "${CFUSER_PYTEST_DIR:-$here}" "$@"
