"""The fusion kinds of issue 22's sweep (bench/sweep.py) and their shapes.

Each kind is a row of KINDS: its cfuser definition (a FusionDefinition left unscheduled, so
it runs by define and run, written as nvFuser's users write it: inputs cast to float, the
math in float, the results cast back to the input's dtype), the same work as a torch user
writes it (native ops where torch has them: torch.softmax, F.layer_norm, F.batch_norm,
torch.var_mean; these are what eager and torch.compile run), a NumPy reference in float64
(the host check), the inputs it takes and the shape family it is swept over. A shape
family is one deterministic generator (FAMILIES); `python3 bench/sweep.py --list-shapes`
prints every kind's shapes. bench/norm_cliffs.py takes its definitions from here.

Key decision: the torch side is written idiomatically rather than op for op like the
definition (x.sum(1) on bfloat16 accumulates in float inside one kernel, as x.float()
.sum(1).to(bf16) computes, without two extra cast kernels): the comparison is against what
a torch user runs. The two forms agree to within the dtype's rounding, which the check's
tolerance (sweep.py) allows for."""
import math
from typing import Callable, List, NamedTuple, Optional, Sequence, Tuple

from cfuser import DataType, FusionDefinition

EPS = 1e-5
DTYPES = {"float32": DataType.Float, "bfloat16": DataType.BFloat16, "float16": DataType.Half}

# ---- the cfuser definitions -------------------------------------------------------------------


def _input(fd, dt, rank=2):
    """A symbolic-size input of dtype dt, cast to float as users write it."""
    return fd.ops.cast(fd.define_tensor(shape=[-1] * rank, dtype=dt), DataType.Float)


def _out(fd, y, dt):
    fd.add_output(fd.ops.cast(y, dt))


def reduce_fd(dt, op, axis):
    with FusionDefinition() as fd:
        x = _input(fd, dt)
        _out(fd, getattr(fd.ops, op)(x, axis), dt)
    return fd


def softmax_fd(dt, log):
    with FusionDefinition() as fd:
        x = _input(fd, dt)
        d = x - fd.ops.max(x, -1, keepdim=True)
        e = fd.ops.exp(d)
        s = fd.ops.sum(e, -1, keepdim=True)
        _out(fd, d - fd.ops.log(s) if log else e / s, dt)
    return fd


def _row_param(fd, dt, rank, axis):
    """A per-channel parameter [C] (weight or bias) broadcast along axis of a rank-d tensor."""
    return fd.ops.broadcast_in_dim(_input(fd, dt, 1), rank, [axis])


def layernorm_fd(dt):
    """y = (x - mean) * rsqrt(var + eps) * w + b over the rows, y alone."""
    with FusionDefinition() as fd:
        x = _input(fd, dt)
        w, b = _row_param(fd, dt, 2, 1), _row_param(fd, dt, 2, 1)
        var, mean = fd.ops.var_mean(x, [1], correction=0, keepdim=True)
        _out(fd, (x - mean) * fd.ops.rsqrt(var + EPS) * w + b, dt)
    return fd


def layernorm_stats_fd(dt):
    """nvFuser's users' layer norm: y, and mean and invstd (reduced shape, float)."""
    with FusionDefinition() as fd:
        x = _input(fd, dt)
        w, b = _row_param(fd, dt, 2, 1), _row_param(fd, dt, 2, 1)
        var, mean = fd.ops.var_mean(x, [1], correction=0, keepdim=False)
        invstd = fd.ops.rsqrt(var + EPS)
        y = (x - fd.ops.broadcast_in_dim(mean, 2, [0])) * fd.ops.broadcast_in_dim(invstd, 2, [0])
        _out(fd, y * w + b, dt)
        fd.add_output(mean)
        fd.add_output(invstd)
    return fd


def rmsnorm_fd(dt):
    with FusionDefinition() as fd:
        x = _input(fd, dt)
        w = _row_param(fd, dt, 2, 1)
        ms = fd.ops.mean(x * x, -1, keepdim=True)
        _out(fd, x * fd.ops.rsqrt(ms + EPS) * w, dt)
    return fd


def batchnorm_fd(dt, rank=2):
    """Training batch norm: statistics per channel, then the normalization. rank 2 is
    channels last ([rows, C], reducing the rows); rank 3 channels first ([N, C, HW],
    reducing N and HW)."""
    axes, channel = ([0], 1) if rank == 2 else ([0, 2], 1)
    with FusionDefinition() as fd:
        x = _input(fd, dt, rank)
        w, b = _row_param(fd, dt, rank, channel), _row_param(fd, dt, rank, channel)
        var, mean = fd.ops.var_mean(x, axes, correction=0, keepdim=True)
        _out(fd, (x - mean) * fd.ops.rsqrt(var + EPS) * w + b, dt)
    return fd


def var_mean_fd(dt):
    with FusionDefinition() as fd:
        var, mean = fd.ops.var_mean(_input(fd, dt), [1], correction=0)
        _out(fd, var, dt)
        _out(fd, mean, dt)
    return fd


def bias_gelu_fd(dt):
    with FusionDefinition() as fd:
        x = _input(fd, dt)
        _out(fd, fd.ops.gelu(x + _row_param(fd, dt, 2, 1)), dt)
    return fd


def swiglu_fd(dt):
    """silu(a) * b, written a * sigmoid(a) * b (cfuser has no silu)."""
    with FusionDefinition() as fd:
        a, b = _input(fd, dt), _input(fd, dt)
        _out(fd, a * fd.ops.sigmoid(a) * b, dt)
    return fd


def transpose_fd(dt):
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.transpose(fd.define_tensor(shape=[-1, -1], dtype=dt), 0, 1))
    return fd


def cast_fd(src, dst):
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.cast(fd.define_tensor(shape=[-1, -1], dtype=src), dst))
    return fd


# ---- torch, as its users write it ---------------------------------------------------------------


_MODULES = {}  # torch and torch.nn.functional, imported on first use (the host check has no torch)


def _torch():
    if "torch" not in _MODULES:
        import torch
        import torch.nn.functional

        _MODULES.update(torch=torch, F=torch.nn.functional)
    return _MODULES["torch"]


def _F():
    _torch()
    return _MODULES["F"]


def t_layernorm_stats(x, w, b):
    torch, xf = _torch(), x.float()
    var, mean = torch.var_mean(xf, 1, correction=0)
    invstd = torch.rsqrt(var + EPS)
    y = (xf - mean[:, None]) * invstd[:, None] * w.float() + b.float()
    return y.to(x.dtype), mean, invstd


def t_rmsnorm(x, w):
    xf = x.float()
    return (xf * _torch().rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) * w.float()).to(x.dtype)


def t_batchnorm(x, w, b):
    """F.batch_norm, or its math where F.batch_norm refuses a batch of one value per channel."""
    if x.numel() // x.shape[1] > 1:
        return _F().batch_norm(x, None, None, w, b, training=True, eps=EPS)
    shape = (1, -1) if x.dim() == 2 else (1, -1, 1)
    xf = x.float()
    var, mean = _torch().var_mean(xf, [0] if x.dim() == 2 else [0, 2], correction=0, keepdim=True)
    return ((xf - mean) * _torch().rsqrt(var + EPS) * w.float().reshape(shape) + b.float().reshape(shape)).to(x.dtype)


# ---- NumPy references (float64) ------------------------------------------------------------------


def _np():
    import numpy

    return numpy


def n_softmax(x, log):
    np = _np()
    d = x - x.max(-1, keepdims=True)
    s = np.exp(d).sum(-1, keepdims=True)
    return d - np.log(s) if log else np.exp(d) / s


def n_layernorm(x, w, b, stats):
    np = _np()
    mean, var = x.mean(1, keepdims=True), x.var(1, keepdims=True)
    invstd = 1 / np.sqrt(var + EPS)
    y = (x - mean) * invstd * w + b
    return (y, mean[:, 0], invstd[:, 0]) if stats else y


def n_batchnorm(x, w, b):
    axes = (0,) if x.ndim == 2 else (0, 2)
    shape = (1, -1) if x.ndim == 2 else (1, -1, 1)
    return (x - x.mean(axes, keepdims=True)) / _np().sqrt(x.var(axes, keepdims=True) + EPS) * w.reshape(shape) + \
        b.reshape(shape)


def n_gelu(x):
    return 0.5 * x * (1 + _np().vectorize(math.erf)(x / math.sqrt(2)))


def n_sigmoid(x):
    return 1 / (1 + _np().exp(-x))


# ---- shapes ---------------------------------------------------------------------------------------

P2 = [1, 16, 1024, 1 << 14, 1 << 20]
PRIMES = [1, 3, 31, 127, 1021, 8191, 131071]
VOCAB = [32000, 50257, 128256]
HIDDEN = [768, 1024, 4096, 5120, 8192, 11008, 14336]
M20 = 1 << 20


def _capped(shapes, cap):
    """Shapes in order, each once, those of at most cap elements."""
    out = []
    for s in shapes:
        if s not in out and math.prod(s) <= cap:
            out.append(s)
    return out


def matrix_shapes(cap):
    """[rows, cols] from 1 to 2^20 either way: the reductions, var_mean and pointwise kinds."""
    grid = [(r, c) for r in P2 for c in P2]
    primes = list(zip(PRIMES, reversed(PRIMES))) + [(127, 127), (1021, 1021), (8191, 8191)]
    models = [(2048, v) for v in VOCAB] + [(8192, h) for h in (768, 4096, 11008)] + [(50257, 768)]
    odd = [(M20, 64), (M20, 100), (8, M20), (100, 1000000), (50000, 100), (128256, 32), (1000003, 3)]
    return _capped(grid + primes + models + odd, cap)


def rows_shapes(cap):
    """[rows, cols] normalized over the rows (cols the row length): vocabulary and hidden
    sizes with enough rows for 2^26 elements (or the cap), single rows, tall-narrow and
    primes."""
    lengths = P2 + PRIMES[1:] + HIDDEN + VOCAB
    full = [(max(1, min(M20, min(1 << 26, cap) // c)), c) for c in lengths]
    single = [(1, c) for c in (1024, 1 << 14, 32000, 128256, 131071, M20)]
    odd = [(8, M20), (100, 1000000), (M20, 64), (M20, 100), (M20, 3), (16384, 4096), (16384, 8192), (4096, 32000),
           (2048, 128256)]
    primes = [(31, 8191), (127, 1021), (1021, 127), (8191, 31), (131071, 7), (3, 131071), (65537, 127)]
    return _capped(full + single + odd + primes, cap)


def channels_last_shapes(cap):
    """[rows, C] (rows = N*H*W) reduced over the rows: batch norm of channels-last activations."""
    rows = [1, 31, 1024, 8191, 100352, 802816, M20]
    grid = [(r, c) for r in rows for c in (1, 3, 64, 100, 256, 2048)]
    return _capped(grid + [(50000, 64), (131071, 127)], cap)


def channels_first_shapes(cap):
    """[N, C, HW] reduced over N and HW: batch norm of channels-first activations."""
    grid = [(n, c, hw) for n in (1, 16, 256) for c in (3, 64, 512) for hw in (1, 49, 3136, 50176)]
    odd = [(1, 1, 1), (7, 31, 127), (31, 127, 7), (3, 1021, 8191), (2, 1, M20), (M20, 3, 1), (32, 100, 1000),
           (128, 64, 784)]
    return _capped(grid + odd, cap)


FAMILIES = {"matrix": matrix_shapes, "rows": rows_shapes, "channels_last": channels_last_shapes,
            "channels_first": channels_first_shapes}
# A few tiny shapes per family for the host check (--check): each a new kernel to compile
# with the host's C compiler, so few; they still cover an extent of 1, primes and both
# orientations.
CHECK_SHAPES = {"matrix": [(1, 1), (7, 33), (33, 7)], "rows": [(1, 1), (5, 67), (67, 3)],
                "channels_last": [(1, 3), (67, 5), (3, 1)], "channels_first": [(1, 1, 1), (3, 5, 7), (2, 3, 1)]}


def shapes(family, cap, check=False):
    return CHECK_SHAPES[family] if check else FAMILIES[family](cap)


# ---- the kinds ----------------------------------------------------------------------------------


class Kind(NamedTuple):
    name: str
    family: str
    define: Callable  # define(dtype name) -> FusionDefinition
    torch: Callable  # torch(*inputs) -> output(s), as a torch user writes it
    numpy: Callable  # numpy(*inputs in float64) -> output(s) in float64
    params: int = 0  # per-channel parameter inputs [C] after the main input(s)
    mains: int = 1  # main inputs, each of the case's shape
    out_dtype: Optional[str] = None  # the outputs' dtype when not the input's ("float32")
    in_dtype: Optional[str] = None  # the inputs' dtype when not the case's ("float32")
    float_stats: bool = False  # outputs after the first are float32 statistics (mean, invstd)


def _red(op, axis):
    tname, nname = ("sum", "sum") if op == "sum" else ("amax", "max")
    return (lambda dt: reduce_fd(DTYPES[dt], op, axis), lambda x: getattr(x, tname)(axis),
            lambda x: getattr(x, nname)(axis))


def _kinds():
    F, T = _F, _torch
    return [
        Kind("row_sum", "matrix", *_red("sum", 1)),
        Kind("col_sum", "matrix", *_red("sum", 0)),
        Kind("row_max", "matrix", *_red("max", 1)),
        Kind("col_max", "matrix", *_red("max", 0)),
        Kind("var_mean", "matrix", lambda dt: var_mean_fd(DTYPES[dt]), lambda x: T().var_mean(x, 1, correction=0),
             lambda x: (x.var(1), x.mean(1))),
        Kind("softmax", "rows", lambda dt: softmax_fd(DTYPES[dt], False), lambda x: T().softmax(x, -1),
             lambda x: n_softmax(x, False)),
        Kind("log_softmax", "rows", lambda dt: softmax_fd(DTYPES[dt], True), lambda x: T().log_softmax(x, -1),
             lambda x: n_softmax(x, True)),
        Kind("layernorm", "rows", lambda dt: layernorm_fd(DTYPES[dt]),
             lambda x, w, b: F().layer_norm(x, x.shape[-1:], w, b, EPS), lambda x, w, b: n_layernorm(x, w, b, False),
             params=2),
        Kind("layernorm_stats", "rows", lambda dt: layernorm_stats_fd(DTYPES[dt]), t_layernorm_stats,
             lambda x, w, b: n_layernorm(x, w, b, True), params=2, float_stats=True),
        Kind("rmsnorm", "rows", lambda dt: rmsnorm_fd(DTYPES[dt]), t_rmsnorm,
             lambda x, w: x / _np().sqrt((x * x).mean(-1, keepdims=True) + EPS) * w, params=1),
        Kind("batchnorm_cl", "channels_last", lambda dt: batchnorm_fd(DTYPES[dt], 2), t_batchnorm, n_batchnorm,
             params=2),
        Kind("batchnorm_cf", "channels_first", lambda dt: batchnorm_fd(DTYPES[dt], 3), t_batchnorm, n_batchnorm,
             params=2),
        Kind("bias_gelu", "matrix", lambda dt: bias_gelu_fd(DTYPES[dt]), lambda x, b: F().gelu(x + b),
             lambda x, b: n_gelu(x + b), params=1),
        Kind("swiglu", "matrix", lambda dt: swiglu_fd(DTYPES[dt]), lambda a, b: F().silu(a) * b,
             lambda a, b: a * n_sigmoid(a) * b, mains=2),
        Kind("transpose", "matrix", lambda dt: transpose_fd(DTYPES[dt]), lambda x: x.t().contiguous(),
             lambda x: _np().ascontiguousarray(x.T)),
        Kind("cast_up", "matrix", lambda dt: cast_fd(DTYPES[dt], DataType.Float), lambda x: x.float(), lambda x: x,
             out_dtype="float32"),
        Kind("cast_down", "matrix", lambda dt: cast_fd(DataType.Float, DTYPES[dt]), None, lambda x: x,
             in_dtype="float32"),
    ]


KINDS = {k.name: k for k in _kinds()}


def skip_reason(kind, dtype):
    """Why kind is not run in dtype (None: it is)."""
    if kind.name.startswith("cast_") and dtype == "float32":
        return "a cast of float32 to float32 moves nothing new (the casts run in bfloat16 and float16)"
    return None


def input_shapes(kind, shape):
    """The shapes of kind's inputs for a case of this shape: the main inputs, then its
    per-channel parameters ([C]: the last axis of a matrix, axis 1 of [N, C, HW])."""
    channels = shape[1] if len(shape) == 3 else shape[-1]
    return [tuple(shape)] * kind.mains + [(channels,)] * kind.params


def as_list(outputs):
    """A kind's outputs as a list (a kind of one output returns it bare)."""
    return list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]


def out_dtypes(kind, dtype, n):
    """The dtypes of kind's n outputs in a case of dtype."""
    first = kind.out_dtype or dtype
    return [first] + ["float32" if kind.float_stats else first] * (n - 1)


def torch_fn(kind, dtype):
    """What torch eager runs for kind in dtype (the casts need the target dtype)."""
    if kind.name == "cast_down":
        target = getattr(_torch(), dtype)
        return lambda x: x.to(target)
    return kind.torch


def select(names: Optional[Sequence[str]]) -> List[Kind]:
    """The kinds named (all when None), in KINDS' order; an unknown name raises ValueError."""
    if not names:
        return list(KINDS.values())
    unknown = [n for n in names if n not in KINDS]
    if unknown:
        raise ValueError(f"unknown kind(s) {', '.join(unknown)}; the kinds are {', '.join(KINDS)}")
    return [k for k in KINDS.values() if k.name in names]


def spread(items: Sequence[Tuple], n: Optional[int]) -> List[Tuple]:
    """At most n of items, evenly spread over the list (all when n is None)."""
    if n is None or n >= len(items):
        return list(items)
    return [items[(i * len(items)) // n] for i in range(n)]
