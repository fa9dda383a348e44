#!/usr/bin/env bash
# Runs the Python frontend's tests (pytest) against a built libcfuser.so; ctest's
# `python_tests.<i>of<n>` call it as: python/tests/run_tests.sh <path of libcfuser.so> [pytest
# args], with CFUSER_PYTEST_SHARD=i/n (conftest.py: every n-th test from the i-th)
# ($CFUSER_PYTEST_DIR: another directory of tests, e.g. tests/conformance's run.sh).
# The suite runs once per interpreter among $CFUSER_PYTHON, python3 on PATH and
# /usr/bin/python3 (distinct executables) that has pytest and numpy: the binding must work
# on a PIE interpreter (pyenv's, handles above 2^31) and on Debian's alike. One without them
# is reported skipped with the reason (CI stays offline); with none at all the run is
# skipped (exit 77). $CFUSER_PYTHON_ONLY=1: only the first usable one. With pytest-xdist
# the tests run in $CFUSER_PYTEST_WORKERS processes (default auto: all cores, or a shard's
# share of them, so that n shards side by side do not start n times as many; 1: serially).
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
lib="${1:?usage: run_tests.sh <libcfuser.so> [pytest args]}"
shift
export CFUSER_LIBRARY="$lib" PYTHONPATH="$here/..${PYTHONPATH:+:$PYTHONPATH}" PYTHONDONTWRITEBYTECODE=1
seen=" " ran=0 rc=0
workers="${CFUSER_PYTEST_WORKERS:-auto}"
shards="${CFUSER_PYTEST_SHARD:-}"
shards="${shards#*/}"
if [ "$workers" = auto ] && [[ "$shards" =~ ^[1-9][0-9]*$ ]]; then
  workers=$(( $(nproc 2>/dev/null || echo 1) / shards ))
  [ "$workers" -ge 1 ] || workers=1
fi
for py in ${CFUSER_PYTHON:-} python3 /usr/bin/python3; do
  command -v "$py" >/dev/null 2>&1 || continue
  exe="$("$py" -c 'import sys; print(sys.executable)' 2>/dev/null)" || continue
  case "$seen" in *" $exe "*) continue ;; esac
  seen="$seen$exe "
  if ! "$py" -c "import pytest, numpy" >/dev/null 2>&1; then
    echo "skipped on $exe: it lacks pytest or numpy (install them, e.g. in a venv given as CFUSER_PYTHON)"
    continue
  fi
  # pytest-xdist where the interpreter has it (the GPU machine's torch venv: the torch CUDA
  # ports run serially for minutes): $workers workers
  xd=()
  if "$py" -c "import xdist" >/dev/null 2>&1 && [ "$workers" != 1 ]; then
    xd=(-n "$workers")
  fi
  echo "== $exe${xd[*]:+ (${xd[*]})}"
  "$py" -m pytest -q -p no:cacheprovider -rs "${xd[@]}" "${CFUSER_PYTEST_DIR:-$here}" "$@" || rc=$?
  ran=$((ran + 1))
  [ "${CFUSER_PYTHON_ONLY:-0}" = 1 ] && break
done
if [ "$ran" = 0 ]; then
  echo "skipped: no Python with pytest and numpy (install python3-pytest python3-numpy, or set CFUSER_PYTHON)"
  exit 77
fi
exit "$rc"
