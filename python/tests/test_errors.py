"""Every error path of the frontend raises an exception of cfuser's classes carrying a
message that names the tensor (and axis); none crashes the interpreter."""
import ctypes
import os
import subprocess
import sys

import numpy as np
import pytest

import cfuser
from cfuser import DataType, FusionDefinition, ParallelType
from cfuser import _capi


def add_fusion(**kw):
    with FusionDefinition(**kw) as fd:
        a, b = fd.define_tensor(2), fd.define_tensor(2)
        fd.add_output(a + b)
    return fd


def ones(shape, dtype=np.float32):
    return np.ones(shape, dtype=dtype)


class FakeCuda:
    """A DLPack producer claiming CUDA memory (its pointer is never dereferenced: the
    device check comes first)."""

    def __init__(self, shape):
        self._shape = (ctypes.c_int64 * len(shape))(*shape)
        self._m = _capi.DLManagedTensor()
        t = self._m.dl_tensor
        t.data, t.device, t.ndim = 16, _capi.DLDevice(_capi.KDLCUDA, 0), len(shape)
        t.dtype, t.shape = _capi.DLDataType(2, 32, 1), self._shape

    def __dlpack_device__(self):
        return (_capi.KDLCUDA, 0)

    def __dlpack__(self, stream=None):
        # A capsule without a destructor: this object owns the DLManagedTensor, and the
        # capsule may outlive it (a traceback keeps execute's frame, and its capsules, until
        # the collector takes them, in any order); _capi.new_capsule's destructor would read
        # the freed struct's deleter.
        new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)(
            ("PyCapsule_New", ctypes.pythonapi))
        return new(ctypes.addressof(self._m), b"dltensor", None)


def raises(cls, message, fn, *args):
    with pytest.raises(cls) as info:
        fn(*args)
    assert str(info.value) == message
    return info.value


def test_wrong_dtype():
    e = raises(cfuser.InvalidArgumentError, "execute: input 1 (T1) has dtype double, expected float",
               add_fusion().execute, [ones((3, 4)), ones((3, 4), np.float64)])
    assert e.status == "ERR_INVALID_ARGUMENT" and isinstance(e, ValueError)


def test_wrong_rank():
    raises(cfuser.InvalidArgumentError, "execute: input 1 (T1) has 1 dimensions, expected 2",
           add_fusion().execute, [ones((3, 4)), ones(4)])


def test_wrong_constant_size():
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.neg(fd.define_tensor([3, 4])))
    raises(cfuser.InvalidArgumentError, "execute: input 0 (T0) has size 5 in dimension 1, expected 4",
           fd.execute, [ones((3, 5))])


def test_mismatched_symbolic_sizes():
    raises(cfuser.InvalidArgumentError, "execute: add: axis 1 has extent 5 in T1 but 4 in T2",
           add_fusion().execute, [ones((3, 4)), ones((3, 5))])


def test_strided_array_for_a_contiguous_tensor():
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.neg(fd.define_tensor(2)))
    raises(cfuser.InvalidArgumentError,
           "run: input 0 (T0) has stride 2 in dimension 1 where the fusion promised a contiguous tensor "
           "(stride 1); define it with contiguity=False for arbitrary strides",
           fd.execute, [ones((3, 8))[:, ::2]])


def test_cuda_array_on_the_host_backend():
    raises(cfuser.InvalidArgumentError,
           "run: input 1 (T1) is in device memory (kDLCUDA), but the kernel accesses its elements and the host "
           "backend needs host memory",
           add_fusion().execute, [ones((3, 4)), FakeCuda((3, 4))])
    raises(cfuser.InvalidArgumentError,
           "run: input 0 (T0) is in device memory (kDLCUDA), but the kernel accesses its elements and the host "
           "backend needs host memory",
           add_fusion(backend="host").execute, [FakeCuda((3, 4)), ones((3, 4))])


@pytest.mark.skipif(cfuser.cuda_available()[0], reason="a CUDA device is present")
def test_cuda_array_without_a_device():
    with pytest.raises(cfuser.NoDeviceError) as info:
        add_fusion().execute([FakeCuda((3, 4)), FakeCuda((3, 4))])
    assert "CUDA" in str(info.value) and info.value.status == "ERR_NO_DEVICE"


def test_op_on_a_tensor_of_another_definition():
    with FusionDefinition() as other:
        t = other.define_tensor(1)
    with FusionDefinition() as fd:
        a = fd.define_tensor(1)
        raises(cfuser.InvalidArgumentError, "add: T0 belongs to another FusionDefinition", fd.ops.add, a, t)
        raises(cfuser.InvalidArgumentError, "exp: T0 belongs to another FusionDefinition", fd.ops.exp, t)
        raises(cfuser.InvalidArgumentError, "add_output: T0 belongs to another FusionDefinition", fd.add_output, t)
        raises(cfuser.InvalidArgumentError, "mul: expected a Tensor, a Scalar or a number, got str", fd.ops.mul, a, "x")
        fd.add_output(a * 2)  # the definition is still usable: nothing reached the C library
    raises(cfuser.InvalidArgumentError, "split: T0 belongs to another FusionDefinition", fd.sched.split, t, 0, 2)
    out, = fd.execute([ones(2)])
    np.testing.assert_array_equal(out, [2, 2])


def test_execute_before_defining_outputs():
    with FusionDefinition() as fd:
        fd.define_tensor(1)
    raises(cfuser.InvalidArgumentError, "execute: the definition has no outputs; call fd.add_output(tensor)",
           fd.execute, [ones(2)])
    raises(cfuser.NotDefinedError, "execute: nothing is defined yet (define the fusion in a with block, or override "
           "definition())", FusionDefinition().execute, [])


def test_execute_inside_the_definition():
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.exp(fd.define_tensor(1)))
        raises(cfuser.InvalidArgumentError,
               "execute: the definition is still open; call it after its with block", fd.execute, [ones(2)])


def test_bad_inputs_list():
    fd = add_fusion()
    raises(cfuser.InvalidArgumentError, "execute: inputs must be a list of arrays, got a ndarray",
           fd.execute, ones((3, 4)))
    raises(cfuser.InvalidArgumentError, "execute: expected 2 inputs, got 1", fd.execute, [ones((3, 4))])
    raises(cfuser.InvalidArgumentError,
           "execute: input 1 is a tensor input; give an array (any DLPack producer), not a list",
           fd.execute, [ones((3, 4)), [[1.0] * 4] * 3])


def test_ops_after_the_definition_is_closed():
    with FusionDefinition() as fd:
        a = fd.define_tensor(1)
        fd.add_output(fd.ops.exp(a))
    msg = ("{}: Attempting to add to a completed definition! (the definition is closed; ops are made inside "
           "`with FusionDefinition() as fd:` or its definition())")
    raises(cfuser.InvalidArgumentError, msg.format("exp"), fd.ops.exp, a)
    raises(cfuser.InvalidArgumentError, msg.format("define_tensor"), fd.define_tensor, 1)
    raises(cfuser.InvalidArgumentError, "FusionDefinition: defined already (a definition's with block runs once)",
           fd.__enter__)


def test_schedule_errors():
    with FusionDefinition() as fd:
        a = fd.define_tensor([4, 8])
        b = fd.ops.exp(a)
        fd.add_output(b)
        raises(cfuser.InvalidArgumentError, "split: schedule after the definition's with block, not inside it",
               fd.sched.split, b, 0, 2)
    e = raises(cfuser.InvalidArgumentError, "split: axis 3 out of range for T1_g_float[iS2{4}, iS3{8}]",
               fd.sched.split, b, 3, 2)
    assert e.status == "ERR_INVALID_ARGUMENT"
    # errors are sticky, as in the C API: the next call reports the first failure
    raises(cfuser.InvalidArgumentError, "split: axis 3 out of range for T1_g_float[iS2{4}, iS3{8}]",
           fd.sched.merge, b, 0)
    raises(cfuser.InvalidArgumentError, "split: axis 3 out of range for T1_g_float[iS2{4}, iS3{8}]",
           fd.execute, [ones((4, 8))])


def test_schedule_arguments_out_of_c_range():
    with FusionDefinition() as fd:
        b = fd.ops.exp(fd.define_tensor([8]))
        fd.add_output(b)
    raises(cfuser.InvalidArgumentError, "split: factor 1180591620717411303424 is not a 64-bit integer",
           fd.sched.split, b, 0, 2**70)
    raises(cfuser.InvalidArgumentError, "merge: 4294967296 is out of range for a C int", fd.sched.merge, b, 2**32)
    # ctypes words the TypeError differently across Python versions: the prefix is cfuser's
    with pytest.raises(cfuser.InvalidArgumentError) as info:
        fd.sched.split(b, 0.5, 2)
    assert str(info.value).startswith("split: argument 3: TypeError: ")
    fd.sched.split(b, 0, 4)  # nothing reached the C library: the definition is fine
    assert b.naxes == 2


def test_schedule_after_execute_is_refused():
    with FusionDefinition() as fd:
        a = fd.define_tensor([8])
        fd.add_output(fd.ops.exp(a))
    fd.execute([ones(8)])
    raises(cfuser.InvalidArgumentError, "parallelize: the schedule is frozen by the first execute (or print_kernel)",
           fd.sched.parallelize, a, 0, ParallelType.block_x)


def test_invalid_schedule_is_reported_at_execute():
    with FusionDefinition() as fd:
        a = fd.define_tensor([64])
        b = fd.ops.exp(a)
        fd.add_output(b)
    fd.sched.parallelize(b, 0, ParallelType.vectorize)  # 64 floats in one vector: refused by the lowering
    with pytest.raises(cfuser.CfuserError) as info:
        fd.execute([ones(64)])
    assert "T1" in str(info.value)


def test_definition_errors():
    with FusionDefinition() as fd:
        raises(cfuser.InvalidArgumentError,
               "unknown dtype 'complex32'; use cfuser.DataType or a name such as 'float32'",
               fd.define_tensor, 1, None, "complex32")
        raises(cfuser.InvalidArgumentError, "define_tensor: rank -1 is outside 0..16 (cfuser's CF_MAX_RANK)",
               fd.define_tensor, -1)
        raises(cfuser.InvalidArgumentError, "define_tensor: rank 1000000000 is outside 0..16 (cfuser's CF_MAX_RANK)",
               fd.define_tensor, 10**9)  # checked before anything of that size is built (issue 28)
        raises(cfuser.InvalidArgumentError, "define_tensor: The value -2 at index 1 was neither symbolic(-1), "
               "zero_element(0), broadcast(1), or static(>1).", fd.define_tensor, [3, -2])
        raises(cfuser.InvalidArgumentError, "define_tensor: Length of contiguity argument (1) must match that of "
               "shape argument (2)", fd.define_tensor, 2, [True])
        a = fd.define_tensor(1)
        raises(cfuser.InvalidArgumentError, "sum: dimension 1 out of range for T0 of 1 dimensions",
               fd.ops.sum, a, 1)
        raises(cfuser.InvalidArgumentError, "transpose: dimension 4294967296 out of range for T0 of 1 dimensions",
               fd.ops.transpose, a, 0, 2**32)
        raises(cfuser.InvalidArgumentError, "permute: dimension 1.5 out of range for T0 of 1 dimensions",
               fd.ops.permute, a, [1.5])
        # operands of different ranks broadcast numpy-style (the C ops insert leading axes)
        assert fd.ops.add(a, fd.define_tensor(2)).ndim == 2
    raises(cfuser.InvalidArgumentError, "FusionDefinition: unknown backend 'tpu'; use 'host', 'cuda' or None",
           FusionDefinition, "tpu")


def test_missing_library_is_an_import_error():
    env = dict(os.environ, CFUSER_LIBRARY="/nonexistent/libcfuser.so")
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir)
    r = subprocess.run([sys.executable, "-c", "import cfuser"], env=dict(env, PYTHONPATH=src),
                       capture_output=True, text=True)
    assert r.returncode == 1
    assert ("cfuser.LibraryNotFoundError" in r.stderr or "LibraryNotFoundError" in r.stderr)
    assert ("cfuser: libcfuser.so not found; tried /nonexistent/libcfuser.so. Build it (./cfuser build) or set "
            "CFUSER_LIBRARY to its path.") in r.stderr


def test_library_rule_order(monkeypatch):
    monkeypatch.delenv("CFUSER_LIBRARY", raising=False)
    monkeypatch.setenv("CFUSER_BUILD_DIR", "/opt/cfuser-build")
    tried = _capi.library_candidates()
    pkg = os.path.dirname(os.path.abspath(cfuser.__file__))
    assert tried[0] == os.path.join(pkg, "libcfuser.so")  # next to the package
    assert tried[1] == "/opt/cfuser-build/libcfuser.so"  # $CFUSER_BUILD_DIR
    assert os.path.normpath(tried[2]) == os.path.normpath(os.path.join(pkg, os.pardir, os.pardir, "build",
                                                                       "libcfuser.so"))  # the checkout's build/
    monkeypatch.setenv("CFUSER_LIBRARY", "/x/libcfuser.so")
    assert _capi.library_candidates() == ["/x/libcfuser.so"]  # an explicit choice only
