#!/usr/bin/env bash
# Runs the conformance matrix (tests/conformance, pytest) against a built libcfuser.so;
# ctest's `conformance_matrix` calls it as: tests/conformance/run.sh <libcfuser.so> [pytest
# args]. The interpreter is python/tests/run_tests.sh's (skipped, 77, without pytest and numpy).
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CFUSER_PYTEST_DIR="$here" exec "$here/../../python/tests/run_tests.sh" "$@"
