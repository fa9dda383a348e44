"""The array libraries the tests run on, each with the reason it is skipped when it is
not usable here: NumPy on the host backend always; PyTorch (CPU and CUDA), CuPy and JAX
where installed (and, for CUDA, where cfuser finds a device). Results are compared with
each library's own computation of the same math."""
from __future__ import annotations

import importlib
import math
from typing import Any, Callable, List, Optional

import numpy as np
import pytest

import cfuser


class ArrayLib:
    """One library on one device: makes arrays from NumPy ones, reads them back, and
    offers its namespace (xp) for reference computations."""

    def __init__(self, name: str, xp: Any, asarray: Callable[[np.ndarray], Any],
                 to_numpy: Callable[[Any], np.ndarray], erf: Callable[[Any], Any]) -> None:
        self.name, self.xp, self.asarray, self.to_numpy, self.erf = name, xp, asarray, to_numpy, erf

    def __repr__(self) -> str:
        return self.name


def _try_import(name: str) -> Optional[Any]:
    try:
        return importlib.import_module(name)
    except Exception:  # a broken install is as good as none here
        return None


def _numpy() -> ArrayLib:
    return ArrayLib("numpy", np, lambda a: a, np.asarray, np.vectorize(math.erf, otypes=[np.float64]))


def _torch(device: str) -> ArrayLib:
    torch = _try_import("torch")
    if torch is None:
        pytest.skip("torch is not installed")
    if device == "cuda":
        ok, why = cfuser.cuda_available()
        if not torch.cuda.is_available() or not ok:
            pytest.skip(f"no CUDA device for torch and cfuser ({why or 'torch.cuda.is_available() is False'})")
    return ArrayLib(f"torch-{device}", torch, lambda a: torch.from_numpy(np.array(a, order="C")).to(device),  # 0-d stays 0-d
                    lambda t: _torch_to_numpy(torch, t), torch.erf)


def _torch_to_numpy(torch: Any, t: Any) -> np.ndarray:
    """A torch tensor's values as NumPy's: bfloat16 and the float8 types, which torch's
    .numpy() refuses, through their bits as ml_dtypes' types (skipped without ml_dtypes)."""
    if isinstance(t, np.ndarray):  # a definition without tensor inputs on the host: NumPy's own outputs
        return t
    t = t.detach().cpu()
    name = str(t.dtype).replace("torch.", "")
    if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        ml = pytest.importorskip("ml_dtypes", reason=f"{name} on NumPy arrays needs ml_dtypes")
        bits = t.contiguous().view(torch.int16 if name == "bfloat16" else torch.uint8).numpy()
        return bits.view(getattr(ml, name))
    return t.numpy()


def _cupy() -> ArrayLib:
    cupy = _try_import("cupy")
    if cupy is None:
        pytest.skip("cupy is not installed")
    ok, why = cfuser.cuda_available()
    if not ok:
        pytest.skip(f"no CUDA device for cfuser: {why}")
    special = importlib.import_module("cupyx.scipy.special")
    return ArrayLib("cupy", cupy, cupy.asarray, cupy.asnumpy, special.erf)


def _jax() -> ArrayLib:
    jnp = _try_import("jax.numpy")
    if jnp is None:
        pytest.skip("jax is not installed")
    import jax

    jax.config.update("jax_enable_x64", True)  # else JAX turns float64 outputs into float32
    return ArrayLib("jax", jnp, lambda a: jax.device_put(a, jax.devices("cpu")[0]), np.asarray, jax.scipy.special.erf)


MAKERS = {"numpy": _numpy, "torch-cpu": lambda: _torch("cpu"), "torch-cuda": lambda: _torch("cuda"),
          "cupy": _cupy, "jax": _jax}
NAMES: List[str] = list(MAKERS)


def make(name: str) -> ArrayLib:
    return MAKERS[name]()
