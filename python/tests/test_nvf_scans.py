"""Port of nvFuser's python frontend tests of its scans and embedding (test_cumprod,
test_cummin, test_cummax and test_embedding of tests/python/direct/test_python_frontend.py,
all 32 parametrizations of the last), with NumPy references (nvf_port.py; the `dev` fixture
runs them on torch CUDA where present, where test_embedding also compares with
torch.nn.functional.embedding itself), and the semantics nvFuser's tests leave out: dtypes
(integers and bool widen for cumprod, keep theirs for cummax/cummin), NaN propagation, both
axes of odd shapes in a fused kernel, cumsum and cumprod of complex64 and complex128
(np.cumsum, np.cumprod), inputs of more than one axis for embedding_fwd, and the refusals
with their messages (cummax and cummin of complex, as torch's)."""
import numpy as np
import pytest

import cfuser
from cfuser import DataType
from nvf_port import close, exec_nvfuser, randn

NP_SCAN = {"cumprod": lambda x, d: np.cumprod(x, axis=d), "cummax": lambda x, d: np.maximum.accumulate(x, axis=d),
           "cummin": lambda x, d: np.minimum.accumulate(x, axis=d)}


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("op", ["cumprod", "cummin", "cummax"])
def test_scan(dev, op, dim):
    # nvFuser's test_cumprod, test_cummin, test_cummax: randn(8, 16), both dims; cummin and
    # cummax compare the values (torch's [0])
    x = randn(8, 16)

    def fusion_func(fd):
        fd.add_output(getattr(fd.ops, op)(fd.from_pytorch(x), dim))

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    if op == "cumprod":  # products in float, each rounded, as NumPy's float32 accumulate
        close(out[0], np.cumprod(x, axis=dim, dtype=np.float32), rtol=1e-6, atol=0)
    else:  # max and min are exact
        close(out[0], NP_SCAN[op](x, dim), rtol=0, atol=0)


@pytest.mark.parametrize("np_dtype", [np.int8, np.int32, np.int64, np.uint32, np.bool_])
@pytest.mark.parametrize("op", ["cumprod", "cummin", "cummax"])
def test_scan_integer_dtypes(dev, op, np_dtype):
    # torch.cumprod of integers and bool gives int64 (wrapping); cummax and cummin keep the
    # dtype. Odd shape, the last axis.
    rng = np.random.default_rng(3)
    info = np.iinfo(np_dtype) if np_dtype is not np.bool_ else None
    x = (rng.integers(0, 2, size=(5, 7)).astype(np.bool_) if info is None else
         rng.integers(max(info.min, -3) if op == "cumprod" else info.min, min(info.max, 4) if op == "cumprod"
                      else info.max, size=(5, 7), endpoint=True, dtype=np.int64).astype(np_dtype))

    def fusion_func(fd):
        fd.add_output(getattr(fd.ops, op)(fd.from_pytorch(x), -1))

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    want = np.cumprod(x.astype(np.int64), axis=-1) if op == "cumprod" else NP_SCAN[op](x, -1)
    assert out[0].dtype == want.dtype
    close(out[0], want, rtol=0, atol=0)


@pytest.mark.parametrize("op", ["cummin", "cummax"])
def test_scan_nan_propagates(dev, op):
    # once a NaN is seen, the running max/min stays NaN (torch.cummax's values); -inf and
    # inf are ordinary values
    x = np.array([[1.0, np.nan, 5.0, -np.inf], [np.inf, -2.0, 3.0, np.nan], [-0.5, -3.0, 7.0, 2.0]], np.float32)

    def fusion_func(fd):
        t0 = fd.from_pytorch(x)
        fd.add_output(getattr(fd.ops, op)(t0, 1))
        fd.add_output(getattr(fd.ops, op)(t0, 0))

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    close(out[0], NP_SCAN[op](x, 1), rtol=0, atol=0)  # NumPy's maximum/minimum propagate NaN too
    close(out[1], NP_SCAN[op](x, 0), rtol=0, atol=0)
    assert np.isnan(out[0][0, 1:]).all() and np.isnan(out[0][1, 3])


@pytest.mark.parametrize("np_dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_scan_complex(dev, op, np_dtype):
    # torch.cumsum and torch.cumprod of complex tensors: folded in the complex dtype itself,
    # as NumPy's accumulate is (each part's sum; products a*c - b*d, a*d + b*c in the part
    # type), along both axes of an odd shape, one of them consumed by a product
    x = (randn(5, 7, dtype=np.float64) + 1j * randn(5, 7, dtype=np.float64, seed=1)).astype(np_dtype)

    def fusion_func(fd):
        t0 = fd.from_pytorch(x)
        fd.add_output(getattr(fd.ops, op)(t0, 1))
        fd.add_output(fd.ops.mul(getattr(fd.ops, op)(t0, 0), 2.0))

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    np_op = np.cumsum if op == "cumsum" else np.cumprod
    # sums exact; NumPy 2's complex128 products use fma where the CPU has it (a*c - b*d
    # rounded once), cfuser's are C's (each product rounded): a few ulps per step apart
    rtol = 0 if op == "cumsum" else 4 * x.shape[1] * np.finfo(np_dtype).eps
    close(out[0], np_op(x, axis=1), rtol=rtol, atol=0)
    close(out[1], np_op(x, axis=0) * np_dtype(2), rtol=rtol, atol=0)


def test_scans_fused_with_pointwise_ops(dev):
    # a computed operand (cut before the scan by define and run), a consumer, double and half
    x, h = randn(3, 37, 5, dtype=np.float64), randn(9, 11, dtype=np.float16, seed=2)

    def fusion_func(fd):
        t0, t1 = fd.from_pytorch(x), fd.from_pytorch(h)
        fd.add_output(fd.ops.mul(fd.ops.cummax(fd.ops.abs(t0), 1), 2.0))
        fd.add_output(fd.ops.cummin(t1, 0))
        fd.add_output(fd.ops.cumprod(fd.ops.add(t1, 1.0), 1))

    out, _ = exec_nvfuser(dev, fusion_func, [x, h])
    close(out[0], np.maximum.accumulate(np.abs(x), axis=1) * 2, rtol=0, atol=0)
    close(out[1], np.minimum.accumulate(h, axis=0), rtol=0, atol=0)
    # half accumulates in float, each product rounded to float, stored as half
    want = np.cumprod((h + np.float16(1)).astype(np.float32), axis=1, dtype=np.float32).astype(np.float16)
    close(out[2], want, rtol=0, atol=0)


def test_scan_errors():
    with cfuser.FusionDefinition() as fd:
        t0 = fd.define_tensor(2, dtype=DataType.Float)
        with pytest.raises(cfuser.InvalidArgumentError, match="cummax: dimension 2 out of range for T0 of 2 dimensions"):
            fd.ops.cummax(t0, 2)
    for op in ("cummax", "cummin"):  # torch refuses them too ("cummax_cpu" not implemented for 'ComplexFloat')
        with cfuser.FusionDefinition() as fd:
            t0 = fd.define_tensor(2, dtype=DataType.ComplexFloat)
            with pytest.raises(cfuser.InvalidArgumentError, match=f"{op} does not take complex tensors"):
                getattr(fd.ops, op)(t0, 0)


# ---- embedding -------------------------------------------------------------------------------

def _weight(dev, a, dtype):
    """a as the weight of dtype on dev (bfloat16: skipped where NumPy lacks ml_dtypes)."""
    if dtype == DataType.Float:
        return dev.asarray(a)
    if dev.name == "numpy":
        ml = pytest.importorskip("ml_dtypes", reason="bfloat16 on NumPy arrays needs ml_dtypes")
        return a.astype(ml.bfloat16)
    return dev.asarray(a).to(dev.xp.bfloat16)


def _as_f32(x):
    if hasattr(x, "float") and hasattr(x, "cpu"):
        return x.float().cpu().numpy()
    return np.asarray(x).astype(np.float32)


def _round_bf16(a):
    """float32 values rounded to bfloat16 (to nearest even), as float32."""
    u = np.ascontiguousarray(a, np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32).reshape(a.shape)


def _embedding_ref(index, weight, max_norm, norm_type, dtype):
    """torch's embedding forward (weight's float32 values): the rows whose norm exceeds
    max_norm scaled by max_norm / (norm + 1e-7), rounded to the weight's dtype."""
    rows = weight[index].astype(np.float64)
    if max_norm is not None:
        norm = np.linalg.norm(rows, ord=norm_type, axis=-1, keepdims=True)
        rows = np.where(norm > max_norm, rows * (max_norm / (norm + 1e-7)), rows)
    rows = rows.astype(np.float32)
    return _round_bf16(rows) if dtype == DataType.BFloat16 else rows


@pytest.mark.parametrize("weight_dtype", [DataType.BFloat16, DataType.Float], ids=["bfloat16", "float32"])
@pytest.mark.parametrize("padding_idx", [None, -2])
@pytest.mark.parametrize("max_norm", [None, 1e-5])
@pytest.mark.parametrize("norm_type", [None, 1.0])
@pytest.mark.parametrize("scale_grad_by_freq", [None, True])
@pytest.mark.parametrize("sparse", [None, True])
def test_embedding(dev, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse, weight_dtype):
    # nvFuser's test_embedding (a bfloat16 weight; the float32 one runs where NumPy has no
    # bfloat16): the optional inputs that are not None are define_scalar inputs (Int, Float,
    # Float, Bool, Bool), passed to execute after input and weight
    dtypes = [DataType.Int, DataType.Float, DataType.Float, DataType.Bool, DataType.Bool]
    optional = [padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse]

    def fusion_func(fd):
        inp = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int, is_cpu=False)
        weight = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=weight_dtype, is_cpu=False)
        opt = [fd.define_scalar(value=None, dtype=dt) if v is not None else None for v, dt in zip(optional, dtypes)]
        fd.add_output(fd.ops.embedding_fwd(inp, weight, *opt))

    n, s = 10, 3
    rng = np.random.default_rng(5)
    index = rng.integers(0, n, size=(s,)).astype(np.int64)
    w32 = rng.standard_normal((n, s)).astype(np.float32)
    w32 = _round_bf16(w32) if weight_dtype == DataType.BFloat16 else w32
    weight = _weight(dev, w32, weight_dtype)
    inputs = [index, weight] + [v for v in optional if v is not None]
    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    got = _as_f32(out[0])
    want = _embedding_ref(index, w32, max_norm, 2.0 if norm_type is None else norm_type, weight_dtype)
    # one rounding of the same product: the scale computed in float here, in double in the
    # reference (torch's CPU kernel); within a bfloat16 ulp, or float's few
    close(got, want, rtol=8e-3 if weight_dtype == DataType.BFloat16 else 2e-6, atol=0)
    if max_norm is None:
        assert (got == w32[index]).all()  # the lookup itself is exact
    if dev.name == "torch-cuda":
        import torch
        ref = torch.nn.functional.embedding(dev.asarray(index), weight.clone(), padding_idx, max_norm,
                                            2.0 if norm_type is None else norm_type, bool(scale_grad_by_freq),
                                            bool(sparse))
        close(got, _as_f32(ref), rtol=1.6e-2, atol=1e-5)


@pytest.mark.parametrize("norm_type", [1.0, 2.0, 3.0, float("inf"), 0.0])
@pytest.mark.parametrize("given", ["constant", "input"])
def test_embedding_norm_types_on_a_2d_input(dev, norm_type, given):
    # an index of two axes (flattened, looked up, reshaped back), float weight, max_norm
    # between the rows' norms so some rows are scaled and the others come back exactly;
    # norm_type a constant (its norm picked when built) or a scalar input (chosen at run time)
    rng = np.random.default_rng(8)
    index = rng.integers(0, 7, size=(2, 5)).astype(np.int64)
    weight = rng.standard_normal((7, 4)).astype(np.float32)
    norms = np.linalg.norm(weight.astype(np.float64), ord=norm_type, axis=1)
    max_norm = float(np.median(norms))

    def fusion_func(fd):
        t0, t1 = fd.from_pytorch(index), fd.from_pytorch(weight)
        p = norm_type if given == "constant" else fd.define_scalar(None, dtype=DataType.Double)
        fd.add_output(fd.ops.embedding_fwd(t0, t1, None, max_norm, p))

    out, _ = exec_nvfuser(dev, fusion_func, [index, weight] + ([norm_type] if given == "input" else []))
    rows = weight[index].astype(np.float64)
    norm = np.linalg.norm(rows, ord=norm_type, axis=-1, keepdims=True)
    scaled = norm > max_norm
    want = np.where(scaled, rows * (max_norm / (norm + 1e-7)), rows).astype(np.float32)
    assert out[0].shape == (2, 5, 4)
    close(out[0], want, rtol=2e-6, atol=0)
    assert (out[0][~scaled[..., 0]] == weight[index][~scaled[..., 0]]).all()  # unscaled rows: bit-exact


def test_embedding_errors():
    with cfuser.FusionDefinition() as fd:
        i, w = fd.define_tensor(1, dtype=DataType.Int), fd.define_tensor(1, dtype=DataType.Float)
        with pytest.raises(cfuser.InvalidArgumentError, match=r"weight T1 has 1 axes; it must be 2-D"):
            fd.ops.embedding_fwd(i, w)
    with cfuser.FusionDefinition() as fd:
        i, w = fd.define_tensor(1, dtype=DataType.Int), fd.define_tensor(2, dtype=DataType.Int)
        with pytest.raises(cfuser.InvalidArgumentError, match="max_norm needs a floating-point weight"):
            fd.ops.embedding_fwd(i, w, max_norm=1.0)
    with cfuser.FusionDefinition() as fd:
        i, w = fd.define_tensor(1, dtype=DataType.Float), fd.define_tensor(2, dtype=DataType.Float)
        with pytest.raises(cfuser.InvalidArgumentError, match="an index must be int32 or int64"):
            fd.ops.embedding_fwd(i, w)
    with cfuser.FusionDefinition() as fd:
        i, w = fd.define_tensor(1, dtype=DataType.Int), fd.define_tensor(2, dtype=DataType.Float)
        with pytest.raises(cfuser.InvalidArgumentError, match="padding_idx .* must be a 0-d integer tensor"):
            fd.ops.embedding_fwd(i, w, 1.5)
