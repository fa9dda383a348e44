"""The harness of the port of nvFuser's python frontend tests (test_nvf_*.py): a test
builds its fusion with a fusion_func(fd) as nvFuser's tests do, runs it on NumPy arrays
(host backend) or, where torch and a GPU are present, on torch CUDA tensors (the `dev`
fixture), and compares with NumPy computing the same math on the same values.

A test of an nvFuser op that this cfuser does not have yet skips itself with the
library's own UnsupportedError message (`needs`), so it runs the day the op is bound.
"""
from __future__ import annotations

import os
from typing import Any, Callable, List, Sequence, Tuple

import numpy as np
import pytest

import arrays
import cfuser
from cfuser import FusionDefinition

# CFUSER_TEST_TORCH_CPU=1 adds torch CPU tensors (the host backend): torch's side of the
# ports (its DLPack, its dtypes) checked on a machine without a GPU
DEVICES = ["numpy", "torch-cuda"] + (["torch-cpu"] if os.environ.get("CFUSER_TEST_TORCH_CPU") == "1" else [])


@pytest.fixture(params=DEVICES)
def dev(request):
    return arrays.make(request.param)


def define(fusion_func: Callable[[FusionDefinition], Any]) -> FusionDefinition:
    with FusionDefinition() as fd:
        fusion_func(fd)
    return fd


def exec_nvfuser(dev: Any, fusion_func: Callable[[FusionDefinition], Any], inputs: Sequence[Any]
                 ) -> Tuple[List[np.ndarray], FusionDefinition]:
    """nvFuser's exec_nvfuser: the fusion's outputs (as NumPy arrays) on dev's arrays."""
    fd = define(fusion_func)
    return run(dev, fd, inputs), fd


def run(dev: Any, fd: FusionDefinition, inputs: Sequence[Any]) -> List[np.ndarray]:
    args = [dev.asarray(x) if isinstance(x, np.ndarray) else x for x in inputs]
    # a definition without tensor inputs runs where the test's arrays live, as nvFuser's on CUDA
    return [dev.to_numpy(o) for o in fd.execute(args, device="cuda" if dev.name == "torch-cuda" else None)]


def randn(*shape: int, dtype: Any = np.float32, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape).astype(dtype)


def close(got: np.ndarray, want: Any, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if got.dtype.kind in "fc":
        wide = np.complex128 if "c" in (got.dtype.kind, want.dtype.kind) else np.float64  # both parts of complex
        np.testing.assert_allclose(got.astype(wide), want.astype(wide), rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


def needs(fn: Callable[[], Any]) -> Any:
    """fn(), or the test skipped with the reason when cfuser refuses an op nvFuser has."""
    try:
        return fn()
    except cfuser.UnsupportedError as e:
        if "not in this cfuser's op table yet" in str(e):
            pytest.skip(f"cfuser lacks the op: {e}")
        raise
