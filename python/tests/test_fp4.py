"""float4_e2m1fn through DLPack (issue 26): arrays hold it as bytes of two elements (torch's
float4_e2m1fn_x2, DLPack lanes 2; uint8 bytes for NumPy and a torch without that dtype),
cfuser counts elements. Values are checked against nibbles computed by hand: code c in
0..7 is 0, 0.5, 1, 1.5, 2, 3, 4, 6 and c + 8 its negative; element 2k is byte k's low
nibble."""
import ctypes

import numpy as np
import pytest

import cfuser
from cfuser import DataType, FusionDefinition, _capi, _dlpack, _packed

FP4 = DataType.Float4_e2m1fn
# [2, 4] elements: 0.5 1 1.5 2 / -0.5 -1 -6 0 (codes 1 2 3 4 / 9 10 15 0)
BYTES = [[0x21, 0x43], [0xA9, 0x0F]]
VALUES = [[0.5, 1.0, 1.5, 2.0], [-0.5, -1.0, -6.0, 0.0]]
# times 1.5, rounded to e2m1 (nearest even, saturating): 0.75 -> 1, 1.5, 2.25 -> 2, 3 /
# -0.75 -> -1, -1.5, -9 -> -6, 0: codes 2 3 4 5 / 10 11 15 0
SCALED = [[0x32, 0x54], [0xBA, 0x0F]]


def scale_fusion():
    """x (fp4 [-1, -1]) -> (float(x), fp4(float(x) * 1.5))."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], dtype=FP4)
        y = fd.ops.cast(x, DataType.Float)
        fd.add_output(y)
        fd.add_output(fd.ops.cast(fd.ops.mul(y, 1.5), FP4))
    return fd


def test_numpy_bytes_in_and_out():
    """uint8 bytes for a Float4_e2m1fn input (the definition's dtype says what they hold);
    the fp4 output comes back as NumPy bytes of shape [M, K] for [M, 2K] elements."""
    fd = scale_fusion()
    y, z = fd.execute([np.array(BYTES, np.uint8)])
    assert y.dtype == np.float32 and y.tolist() == VALUES
    assert z.dtype == np.uint8 and z.tolist() == SCALED


def test_bytes_at_any_address():
    """A view of bytes one row in (8 bytes past a 16-byte boundary): packed tensors are read
    and written byte by byte, so the call is not devectorized (that was an internal error:
    the packed write refused without its vector)."""
    big = np.zeros((3, 8), np.uint8)
    big[1, :2], big[2, :2] = BYTES[0], BYTES[1]
    fd = scale_fusion()
    y, z = fd.execute([big[1:]])
    assert y[:, :4].tolist() == VALUES and not y[:, 4:].any()
    assert z[:, :2].tolist() == SCALED and not z[:, 2:].any()


def test_strided_rows_and_fixed_sizes_count_elements():
    """Fixed sizes and strides are checked in elements: [2, 4] declared, 2 bytes a row given;
    rows 16 bytes apart are 32 elements apart (contiguity=False takes them)."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([2, 4], contiguity=[False, True], dtype=FP4)
        fd.add_output(fd.ops.cast(x, DataType.Float))
    big = np.zeros((4, 16), np.uint8)
    big[0, :2], big[2, :2] = BYTES[0], BYTES[1]
    (y,) = fd.execute([big[::2, :2]])
    assert y.tolist() == VALUES
    with pytest.raises(cfuser.InvalidArgumentError) as info:
        fd.execute([np.zeros((2, 4), np.uint8)])
    assert str(info.value) == "execute: input 0 has size 8 in dimension 1, expected 4"


class Producer:
    """A DLPack producer of a hand-made DLManagedTensor over a NumPy buffer (torch's export
    of a float4_e2m1fn_x2 tensor is code 17, bits 4, lanes 2, shape in bytes)."""

    def __init__(self, data, dtype, shape, strides=None):
        self.data = data
        self.shape_c = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        self.strides_c = (ctypes.c_int64 * max(len(shape), 1))(*strides) if strides else None
        t = _capi.DLTensor(data.ctypes.data, _capi.DLDevice(_capi.KDLCPU, 0), len(shape), _capi.DLDataType(*dtype),
                           self.shape_c, self.strides_c, 0)
        self.managed = _capi.DLManagedTensor(t, None, None)  # no deleter: this object owns everything

    def __dlpack_device__(self):
        return (_capi.KDLCPU, 0)

    def __dlpack__(self, stream=None, **_):
        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self.managed), b"dltensor", None)


def managed_bytes(t):
    """(DLPack type, shape, the bytes) of a DLPackTensor, read through its capsule."""
    capsule = t.__dlpack__()  # frees the tensor when collected (never consumed here)
    d = _capi.DLManagedTensor.from_address(_capi.capsule_pointer(capsule)).dl_tensor
    shape = tuple(d.shape[i] for i in range(d.ndim))
    n = int(np.prod(shape)) // (2 if d.dtype.lanes == 1 else 1)
    data = list(ctypes.string_at(d.data + d.byte_offset, n)) if n else []
    return (d.dtype.code, d.dtype.bits, d.dtype.lanes), shape, data


def test_lanes_two_capsule_in_dlpack_form_out():
    """A capsule of torch's form (lanes 2, [2, 2] bytes) is [2, 4] elements; a producer
    outside the known libraries gets DLPackTensors, the fp4 one in DLPack's own form
    (lanes 1, shape in elements)."""
    fd = scale_fusion()
    src = np.array(BYTES, np.uint8)
    y, z = fd.execute([Producer(src, _packed.PAIRS, (2, 2))])
    assert isinstance(z, cfuser.DLPackTensor) and z.shape == (2, 4)
    assert np.from_dlpack(y).tolist() == VALUES
    assert managed_bytes(z) == (_packed.ELEMENTS, (2, 4), [b for row in SCALED for b in row])
    # DLPack's own form (lanes 1, elements) is taken as it is
    y, _ = fd.execute([Producer(src, _packed.ELEMENTS, (2, 4))])
    assert np.from_dlpack(y).tolist() == VALUES


def test_adopted_outputs_become_bytes():
    """An fp4 output cfuser allocated (here: empty) is rewritten to the adopting library's
    bytes: torch's float4_e2m1fn_x2 (lanes 2) or uint8, its shape [M, K] for [M, 2K]."""
    sizes = (ctypes.c_int64 * 2)(3, 8)
    for pairs in (_packed.PAIRS, _packed.UINT8):
        fw = _dlpack.Framework("test", None, lambda t: t, pairs=lambda p=pairs: p)
        t = _dlpack.adopt(fw, _capi.lib.cf_tensor_host(int(FP4), 2, sizes), "execute: output 0")
        assert t.shape == (3, 4)
        code, shape, _ = managed_bytes(t)
        assert code == pairs and shape == (3, 4)
    assert _packed.pair_dtype(None) == ("uint8", _packed.UINT8)  # no torch: bytes
    np_out = _dlpack.adopt(_dlpack.FRAMEWORKS["numpy"], _capi.lib.cf_tensor_host(int(FP4), 2, sizes), "o")
    assert np_out.dtype == np.uint8 and np_out.shape == (3, 4)


def test_empty_outputs():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1])
        fd.add_output(fd.ops.cast(x, FP4))
    (z,) = fd.execute([np.zeros((3, 0), np.float32)])
    assert z.dtype == np.uint8 and z.shape == (3, 0)
    (z,) = fd.execute([np.array([[7.0, -0.25, 5.0, np.nan]], np.float32)])
    assert z.tolist() == [[0x87, 0x76]]  # 7 -> 6 (saturated), -0.25 -> -0 (tie, even), 5 -> 4 (tie), NaN -> +6


def test_refusals_name_the_tensor():
    fd = scale_fusion()
    src = np.array(BYTES, np.uint8)
    cases = [
        (Producer(src, (17, 4, 4), (2, 1)),
         "execute: input 0 has DLPack dtype float4_e2m1fn (code 17) with 4 lanes; cfuser takes lanes 1 (elements, two "
         "per byte: DLPack's form) or 2 (one byte of two elements: torch's float4_e2m1fn_x2)"),
        (np.zeros((4, 4), np.uint8)[:, ::2],
         "execute: input 0 (uint8, two elements per byte) has no dimension of stride 1 (strides (4, 2)); each byte "
         "holds two neighbours along its contiguous dimension: pass a copy with one"),
        (Producer(src, _packed.PAIRS, (2, 2), (2, 4)),
         "execute: input 0 (float4_e2m1fn_x2, two elements per byte) has no dimension of stride 1 (strides (2, 4)); "
         "each byte holds two neighbours along its contiguous dimension: pass a copy with one"),
        (Producer(src, _packed.ELEMENTS, (2, 3)),
         "execute: input 0 (T0) has dtype __e2m1, two elements per byte, and innermost extent 3; it must be even"),
    ]
    for arg, msg in cases:
        with pytest.raises(cfuser.InvalidArgumentError) as info:
            fd.execute([arg])
        assert str(info.value) == msg
    with FusionDefinition() as fd0:
        x = fd0.define_tensor([], dtype=FP4)
        fd0.add_output(fd0.ops.cast(x, DataType.Float))
    with pytest.raises(cfuser.InvalidArgumentError) as info:
        fd0.execute([np.zeros((), np.uint8)])
    assert str(info.value) == ("execute: input 0 is a 0-d uint8 tensor (one byte, two elements); a packed tensor "
                               "needs an innermost dimension to hold its pairs")
    with FusionDefinition() as odd:
        x = odd.define_tensor([-1, -1])
        odd.add_output(odd.ops.cast(x, FP4))
    with pytest.raises(cfuser.InvalidArgumentError) as info:
        odd.execute([np.zeros((2, 3), np.float32)])
    assert str(info.value) == ("execute: output 0 has a packed dtype, two elements per byte, and innermost extent 3; "
                               "it must be even")


class FakeTorchPairs:
    """What from_pytorch reads of a torch float4_e2m1fn_x2 tensor: dtype, shape, stride()."""

    dtype = "torch.float4_e2m1fn_x2"

    def __init__(self, shape, strides):
        self.shape, self._strides = shape, strides

    def stride(self):
        return self._strides

    def is_contiguous(self):
        return list(self._strides) == [self.shape[1], 1]


def test_from_pytorch_counts_elements():
    """from_pytorch of float4_e2m1fn_x2 [3, 5] (bytes) defines Float4_e2m1fn [3, 10]; of
    rows 8 bytes apart, strides [16, 1] in elements."""
    assert cfuser.types.as_dtype("torch.float4_e2m1fn_x2") is FP4
    with FusionDefinition() as fd:
        x = fd.from_pytorch(FakeTorchPairs((3, 5), (5, 1)), static_sizes=True)
        y = fd.from_pytorch(FakeTorchPairs((3, 5), (8, 1)), static_sizes=True)
        fd.add_output(fd.ops.cast(x, DataType.Float))
        fd.add_output(fd.ops.cast(y, DataType.Float))
    assert "T0_g___e2m1[iS0{3}, iS1{10}]" in fd.fusion_ir()  # the strided one's sizes are checked by execute
    big = np.zeros((3, 8), np.uint8)
    big[:2, :2] = BYTES
    y0, y1 = fd.execute([np.zeros((3, 5), np.uint8), big[:, :5]])
    assert y1[:2, :4].tolist() == VALUES and y0.shape == (3, 10)


def _torch_pairs():
    try:
        import torch as t
    except ImportError:
        pytest.skip("torch is not installed: the DLPack capsules of torch's form are tested by hand above")
    if not hasattr(t, "float4_e2m1fn_x2"):
        pytest.skip(f"torch {t.__version__} has no float4_e2m1fn_x2: it passes fp4 as uint8 bytes, "
                    "tested above")
    return t


def test_torch_float4_e2m1fn_x2_in_and_out():
    """torch's float4_e2m1fn_x2 tensors in and out: [2, 2] bytes are [2, 4] elements; the
    fp4 output is float4_e2m1fn_x2 [2, 2] (torch.from_dlpack of ours too)."""
    t = _torch_pairs()
    x = t.tensor(BYTES, dtype=t.uint8).view(t.float4_e2m1fn_x2)
    fd = scale_fusion()
    y, z = fd.execute([x])
    assert y.dtype == t.float32 and y.tolist() == VALUES
    assert z.dtype == t.float4_e2m1fn_x2 and tuple(z.shape) == (2, 2)
    assert z.view(t.uint8).tolist() == SCALED
    with FusionDefinition() as fd2:
        a = fd2.from_pytorch(x)
        fd2.add_output(fd2.ops.cast(a, DataType.Float))
    assert fd2.execute([x])[0].tolist() == VALUES
    out = t.from_dlpack(_dlpack.adopt(_dlpack.FRAMEWORKS["torch"], _capi.lib.cf_tensor_host(
        int(FP4), 2, (ctypes.c_int64 * 2)(2, 4)), "o"))
    assert out.dtype == t.float4_e2m1fn_x2 and tuple(out.shape) == (2, 2)


def test_float4_e2m1fn_x2_in_define_tensor_counts_bytes():
    """nvFuser's spelling: define_tensor(shape in bytes, dtype=Float4_e2m1fn_x2) is the
    Float4_e2m1fn input of twice as many elements along its fastest axis (the last, or
    stride order 0); -1 stays a size read at run time. Anywhere else the dtype is refused,
    naming what to use."""
    for shape, order in (([2, 2], None), ([-1, -1], None), ([2, -1], None), ([2, 2], [1, 0])):
        with FusionDefinition() as fd:
            x = fd.define_tensor(shape, dtype=DataType.Float4_e2m1fn_x2, stride_order=order)
            fd.add_output(fd.ops.cast(x, DataType.Float))
        assert x.dtype == FP4
        (y,) = fd.execute([np.array(BYTES, np.uint8)])
        assert y.tolist() == VALUES, (shape, order)
        (y,) = fd.execute([Producer(np.array(BYTES, np.uint8), _packed.PAIRS, (2, 2))])  # torch's form
        assert np.from_dlpack(y).tolist() == VALUES, (shape, order)
    with FusionDefinition() as fd:  # stride order 0 names the fastest axis: axis 0 doubles
        x = fd.define_tensor([3, 5], dtype=DataType.Float4_e2m1fn_x2, stride_order=[0, 1])
        assert [int(x.size(0)), int(x.size(1))] == [6, 5]
    with FusionDefinition() as fd:
        x = fd.define_tensor(sizes=[2, 2], strides=[2, 1], dtype=DataType.Float4_e2m1fn_x2)
        fd.add_output(fd.ops.cast(x, DataType.Float))
    (y,) = fd.execute([np.array(BYTES, np.uint8)])
    assert y.tolist() == VALUES
    msg = ("DataType.Float4_e2m1fn_x2 is one byte of two Float4_e2m1fn elements (torch's float4_e2m1fn_x2): "
           "define_tensor takes it, its shape counting bytes; elsewhere use DataType.Float4_e2m1fn")
    with FusionDefinition() as fd:
        x = fd.define_tensor([2, 4])
        with pytest.raises(cfuser.InvalidArgumentError) as info:
            fd.ops.cast(x, DataType.Float4_e2m1fn_x2)
        assert str(info.value) == msg
        with pytest.raises(cfuser.InvalidArgumentError) as info:
            fd.define_tensor([], dtype=DataType.Float4_e2m1fn_x2)
        assert str(info.value) == ("define_tensor: a 0-d Float4_e2m1fn_x2 tensor (one byte, two elements); a packed "
                                   "tensor needs an axis to hold its pairs")


def test_transposed_bytes_pair_along_their_contiguous_axis():
    """A transposed view of bytes (strides (1, 2)): each byte holds two neighbours along its
    contiguous axis, the first, so the element view is [4, 2], element (i, j) nibble i % 2
    of byte [i // 2, j]: the transpose of VALUES. NumPy's view and torch's form alike."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=[False, False], dtype=FP4)
        fd.add_output(fd.ops.cast(x, DataType.Float))
    want = np.array(VALUES).T.tolist()
    (y,) = fd.execute([np.array(BYTES, np.uint8).T])
    assert y.tolist() == want
    (y,) = fd.execute([Producer(np.array(BYTES, np.uint8), _packed.PAIRS, (2, 2), (1, 2))])
    assert np.from_dlpack(y).tolist() == want
    with FusionDefinition() as fd:  # nvFuser's spelling: bytes [2, 2], axis 0 fastest
        x = fd.define_tensor([2, 2], dtype=DataType.Float4_e2m1fn_x2, stride_order=[0, 1])
        fd.add_output(fd.ops.cast(x, DataType.Float))
    (y,) = fd.execute([np.array(BYTES, np.uint8).T])
    assert y.tolist() == want
