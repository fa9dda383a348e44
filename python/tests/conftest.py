"""Shared fixtures: `lib` runs a test once per array library (skipped with the reason
where one is missing); `rng` is a seeded NumPy generator. $CFUSER_PYTEST_SHARD=i/n runs
one n-th of the suite (every n-th test from the i-th, in collection order, so that each
shard gets its share of every file's parameters): ctest runs python_tests as n shards side
by side."""
import os
import sys

import numpy as np
import pytest

try:
    import cfuser  # noqa: F401  (an installed package, or PYTHONPATH)
except ImportError as e:
    if "libcfuser" in str(e):
        raise
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

import arrays  # noqa: E402


@pytest.fixture(params=arrays.NAMES)
def lib(request):
    return arrays.make(request.param)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


from nvf_port import dev  # noqa: E402,F401  (the port's fixture: NumPy, and torch CUDA where present)


def _shard():
    """(i, n) of $CFUSER_PYTEST_SHARD ("i/n", 1 <= i <= n), or None when unset."""
    spec = os.environ.get("CFUSER_PYTEST_SHARD", "")
    if not spec:
        return None
    try:
        i, n = (int(v) for v in spec.split("/"))
    except ValueError:
        i = n = 0
    if not 1 <= i <= n:
        raise pytest.UsageError(f"CFUSER_PYTEST_SHARD={spec!r}: expected i/n with 1 <= i <= n, e.g. 2/4")
    return i, n


def pytest_collection_modifyitems(config, items):
    shard = _shard()
    if shard is None:
        return
    i, n = shard
    config.hook.pytest_deselected(items=[t for k, t in enumerate(items) if k % n != i - 1])
    items[:] = items[i - 1::n]
