#!/usr/bin/env bash
# Runs the conformance matrix (tests/conformance, pytest) against a built libcfuser.so;
# ctest's `conformance_matrix` calls it as: tests/conformance/run.sh <libcfuser.so> [pytest args].
# The interpreter is $CFUSER_PYTHON, else the first of python3 on PATH and /usr/bin/python3
# that has pytest and numpy. Without one it reports itself skipped (exit 77) with the reason.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
lib="${1:?usage: run.sh <libcfuser.so> [pytest args]}"
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
export CFUSER_LIBRARY="$lib" PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" PYTHONDONTWRITEBYTECODE=1
exec "$pick" -m pytest -q -p no:cacheprovider -rs "$here" "$@"
