"""A definition as Thunder generates them, run unchanged: a GPT block's layer norm,
attention scores with RoPE (slice, cat, neg), a causal softmax and dropout, with mixed
fixed/-1 shapes, contiguity with None (broadcast axes), broadcast_in_dim with shapes,
Scalars (define_scalar) everywhere and casts around bfloat16-style float32 compute.
NumPy is the reference (on the GPU machine the `dev` fixture runs it on torch CUDA)."""
import numpy as np
import pytest

import cfuser

from cfuser import DataType, FusionDefinition
from nvf_port import close, randn, run

B, H, T, D = 2, 2, 8, 16  # batch, heads, sequence, head size; C = H * D
C = H * D


def nvfuser_fusion_id0(fd: FusionDefinition, rope: bool = True) -> None:
    T0 = fd.define_tensor(shape=[-1, -1, C], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False,
                          stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[C], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T2 = fd.define_tensor(shape=[C], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T3 = fd.define_tensor(shape=[1, 1, T, D], contiguity=[None, None, True, True], dtype=DataType.Float,
                          is_cpu=False)  # cos
    T4 = fd.define_tensor(shape=[1, 1, T, D], contiguity=[None, None, True, True], dtype=DataType.Float,
                          is_cpu=False)  # sin
    T5 = fd.define_tensor(shape=[-1, H, T, D], contiguity=[True, True, True, True], dtype=DataType.Float,
                          is_cpu=False)  # k
    S6 = fd.define_scalar(1e-05, dtype=DataType.Double)
    # layer norm over the last axis
    T7 = fd.ops.cast(T0, dtype=DataType.Float)
    T8, T9 = fd.ops.var_mean(T7, dims=[2], correction=0, keepdim=False)
    T10 = fd.ops.broadcast_in_dim(T8, shape=[B, T, 1], broadcast_dims=[0, 1])
    T11 = fd.ops.broadcast_in_dim(T9, shape=[B, T, 1], broadcast_dims=[0, 1])
    T12 = fd.ops.add(T10, S6)
    T13 = fd.ops.rsqrt(T12)
    T14 = fd.ops.broadcast_in_dim(T11, shape=[B, T, C], broadcast_dims=[0, 1, 2])
    T15 = fd.ops.sub(T7, T14)
    T16 = fd.ops.broadcast_in_dim(T13, shape=[B, T, C], broadcast_dims=[0, 1, 2])
    T17 = fd.ops.mul(T15, T16)
    T18 = fd.ops.broadcast_in_dim(T1, shape=[B, T, C], broadcast_dims=[2])
    T19 = fd.ops.mul(T17, T18)
    T20 = fd.ops.broadcast_in_dim(T2, shape=[B, T, C], broadcast_dims=[2])
    T21 = fd.ops.add(T19, T20)
    T22 = fd.ops.cast(T21, dtype=DataType.Float)
    fd.add_output(T22)
    # q as heads: (B, T, C) -> (B, T, H, D) -> (B, H, T, D)
    T23 = fd.ops.reshape(T22, new_shape=[B, T, H, D])
    T24 = fd.ops.permute(T23, dims=[0, 2, 1, 3])
    # RoPE: rotate_half(q) = cat(-q2, q1)
    T25 = fd.ops.slice(T24, start_indices=[0, 0, 0, 0], end_indices=[B, H, T, D // 2], strides=[1, 1, 1, 1])
    T26 = fd.ops.slice(T24, start_indices=[0, 0, 0, D // 2], end_indices=[B, H, T, D], strides=[1, 1, 1, 1])
    T27 = fd.ops.neg(T26)
    T28 = fd.ops.cat([T27, T25], dim=-1)
    T29 = fd.ops.broadcast_in_dim(T3, shape=[B, H, T, D], broadcast_dims=[0, 1, 2, 3])
    T30 = fd.ops.mul(T24, T29)
    T31 = fd.ops.broadcast_in_dim(T4, shape=[B, H, T, D], broadcast_dims=[0, 1, 2, 3])
    T32 = fd.ops.mul(T28, T31)
    T33 = fd.ops.add(T30, T32) if rope else T24
    fd.add_output(T33)
    # scores = q @ k^T / sqrt(D), as a broadcast multiply and a sum
    T34 = fd.ops.broadcast_in_dim(T33, shape=[B, H, T, 1, D], broadcast_dims=[0, 1, 2, 4])
    T35 = fd.ops.broadcast_in_dim(T5, shape=[B, H, 1, T, D], broadcast_dims=[0, 1, 3, 4])
    T36 = fd.ops.sum(fd.ops.mul(T34, T35), dims=[4], keepdim=False, dtype=DataType.Null)
    S37 = fd.define_scalar(1.0 / np.sqrt(D), dtype=DataType.Double)
    T38 = fd.ops.mul(T36, S37)
    # causal mask and softmax
    T39 = fd.ops.full(shape=[T, T], fill_value=fd.define_scalar(1.0, dtype=DataType.Double), dtype=DataType.Float)
    T40 = fd.ops.triu(T39, 1)
    T41 = fd.ops.broadcast_in_dim(T40, shape=[B, H, T, T], broadcast_dims=[2, 3])
    T42 = fd.ops.gt(T41, fd.define_scalar(0.0, dtype=DataType.Double))
    T43 = fd.ops.where(T42, fd.define_scalar(float("-inf"), dtype=DataType.Double), T38)
    T44 = fd.ops.max(T43, dims=[3], keepdim=False, dtype=DataType.Null)
    T45 = fd.ops.broadcast_in_dim(T44, shape=[B, H, T, 1], broadcast_dims=[0, 1, 2])
    T46 = fd.ops.exp(fd.ops.sub(T43, T45))
    T47 = fd.ops.sum(T46, dims=[3], keepdim=False, dtype=DataType.Null)
    T48 = fd.ops.broadcast_in_dim(T47, shape=[B, H, T, 1], broadcast_dims=[0, 1, 2])
    T49 = fd.ops.div(T46, T48)
    fd.add_output(T49)
    # dropout(p=0.1): mask from uniform numbers of a given seed and offset, scaled by 1/(1-p)
    S50 = fd.define_scalar(0.1, dtype=DataType.Double)
    T51 = fd.ops.uniform(fd.define_scalar(0.0), fd.define_scalar(1.0), shape=[B, H, T, T], dtype=DataType.Float,
                         rng_seed=fd.define_scalar(29), rng_offset=fd.define_scalar(0))
    T52 = fd.ops.ge(T51, S50)
    T53 = fd.ops.mul(fd.ops.cast(T52, dtype=DataType.Float), T49)
    T54 = fd.ops.mul(T53, fd.define_scalar(1.0 / 0.9, dtype=DataType.Double))
    fd.add_output(T52)
    fd.add_output(T54)


def _reference(x, w, b, cos, sin, k, keep, rope):
    x64 = x.astype(np.float64)
    ln = (x64 - x64.mean(2, keepdims=True)) / np.sqrt(x64.var(2, keepdims=True) + 1e-5) * w + b
    q = ln.reshape(B, T, H, D).transpose(0, 2, 1, 3)
    rot = np.concatenate([-q[..., D // 2:], q[..., :D // 2]], -1)
    q = q * cos + rot * sin if rope else q
    s = np.einsum("bhid,bhjd->bhij", q, k) / np.sqrt(D)
    s = np.where(np.triu(np.ones((T, T)), 1) > 0, -np.inf, s)
    e = np.exp(s - s.max(3, keepdims=True))
    p = e / e.sum(3, keepdims=True)
    return ln, q, p, p * keep / 0.9


@pytest.mark.parametrize("rope", [True, False])
def test_thunder_gpt_block_runs_unchanged(dev, rope):
    fd = FusionDefinition()
    with fd:
        nvfuser_fusion_id0(fd, rope)
    theta = np.outer(np.arange(T), 1.0 / 10000 ** (np.arange(D // 2) * 2 / D))
    cos = np.concatenate([np.cos(theta)] * 2, -1).astype(np.float32)[None, None]
    sin = np.concatenate([np.sin(theta)] * 2, -1).astype(np.float32)[None, None]
    x, w, b, k = randn(B, T, C), randn(C, seed=1), randn(C, seed=2), randn(B, H, T, D, seed=3)
    ln, q, probs, keep, dropped = run(dev, fd, [x, w, b, cos, sin, k])
    want = _reference(x, w, b, cos.astype(np.float64), sin.astype(np.float64), k.astype(np.float64), keep, rope)
    close(ln, want[0].astype(np.float32), rtol=1e-4, atol=1e-4)
    close(q, want[1].astype(np.float32), rtol=1e-4, atol=1e-4)
    close(probs, want[2].astype(np.float32), rtol=1e-4, atol=1e-5)
    assert keep.dtype == np.bool_ and 0.8 < keep.mean() < 0.97  # p = 0.1 dropped
    close(dropped, want[3].astype(np.float32), rtol=1e-4, atol=1e-5)
    again = run(dev, fd, [x, w, b, cos, sin, k])  # the same seed and offset: the same mask
    np.testing.assert_array_equal(again[3], keep)
