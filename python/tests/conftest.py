"""Shared fixtures: `lib` runs a test once per array library (skipped with the reason
where one is missing); `rng` is a seeded NumPy generator."""
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
