"""DLPack without copies: outputs cfuser allocates are adopted in place, outputs the array
library allocates are filled in place, and both ways give the same shapes."""
import ctypes

import numpy as np
import pytest

import cfuser
from cfuser import FusionDefinition, _capi, _dlpack


def host_tensor(shape):
    sizes = (ctypes.c_int64 * len(shape))(*shape)
    return _capi.lib.cf_tensor_host(int(cfuser.DataType.Float), len(shape), sizes)


def test_dlpack_tensor_is_adopted_in_place_and_consumed_once():
    m = host_tensor((2, 3))
    data = _capi.DLManagedTensor.from_address(m).dl_tensor.data
    t = cfuser.DLPackTensor(m)
    assert t.shape == (2, 3) and t.__dlpack_device__() == (_capi.KDLCPU, 0)
    a = np.from_dlpack(t)
    assert a.__array_interface__["data"][0] == data  # the same memory: no copy
    assert a.shape == (2, 3)  # numpy frees it with cfuser's deleter when a is collected
    with pytest.raises(cfuser.InvalidArgumentError) as info:
        t.__dlpack__()
    assert str(info.value) == "DLPackTensor: exported already (a DLPack tensor is consumed once)"


def test_unexported_dlpack_tensor_frees_itself():
    t = cfuser.DLPackTensor(host_tensor((4,)))
    del t  # freed by cf_tensor_free; ASan of the C suite covers the deleter itself


def fusions():
    """(name, number of inputs' shapes, builder) covering every shape rule of execute."""
    def reduce_keep(fd, a, b):
        return [fd.ops.sum(a, 1, keepdim=True), fd.ops.max(b, -1)]

    def bcast(fd, a, b):
        return [fd.ops.broadcast(fd.ops.sum(a, 1), [False, True]) * b]

    def perm(fd, a, b):
        return [fd.ops.permute(a, [1, 0]), fd.ops.transpose(b, 0, 1) + 1]

    def elementwise(fd, a, b):
        return [fd.ops.where(fd.ops.lt(a, b), a, b), fd.ops.cast(a, "float64")]

    return {"reduce_keep": reduce_keep, "broadcast": bcast, "permute": perm, "elementwise": elementwise}


@pytest.mark.parametrize("name", sorted(fusions()))
def test_library_allocated_outputs_match_cfuser_allocated(name, monkeypatch):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = np.arange(12, dtype=np.float32).reshape(3, 4)[::-1].copy()

    def run():
        with FusionDefinition() as fd:
            a, b = fd.define_tensor(2), fd.define_tensor(2)
            for t in fusions()[name](fd, a, b):
                fd.add_output(t)
        return fd.execute([x, y])

    by_numpy = run()
    monkeypatch.setattr(_dlpack.FRAMEWORKS["numpy"], "empty", None)
    by_cfuser = run()
    assert [o.shape for o in by_numpy] == [o.shape for o in by_cfuser]
    for got, want in zip(by_numpy, by_cfuser):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_outputs_are_the_first_inputs_library():
    class Wrapped:
        """Some other library's array: outputs come back as DLPackTensors."""

        def __init__(self, a):
            self.a = a

        def __dlpack__(self, stream=None):
            return self.a.__dlpack__()

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    with FusionDefinition() as fd:
        fd.add_output(fd.ops.neg(fd.define_tensor(1)))
    out, = fd.execute([Wrapped(np.arange(3, dtype=np.float32))])
    assert isinstance(out, cfuser.DLPackTensor)
    np.testing.assert_array_equal(np.from_dlpack(out), [0, -1, -2])
