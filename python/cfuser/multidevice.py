"""cfuser.multidevice: fusions sharded over a mesh of devices (include/cfuser/multidevice.h),
shaped like nvFuser's multidevice frontend.

    mesh = DeviceMesh(range(n))                  # or nested lists for a 2-D mesh, or a tensor
    with FusionDefinition() as fd:
        x = fd.define_tensor([n, 4])
        fd.add_output(fd.ops.sum(x, [0]))
    fd.sched.set_device_mesh(x, mesh)            # nvFuser: x.set_device_mesh(mesh)
    fd.sched.parallelize(x, 0, ParallelType.mesh_x)   # (or in an overridden schedule())
    ex = MultiDeviceExecutor(fd)
    outs = ex.run_host_mesh([[shard_tensor(fd, x_full, x, d)] for d in range(n)])  # the host mesh
    outs = ex.run([my_shard])                    # under torchrun: this process's GPU, through NCCL

A tensor placed on a mesh keeps the sharding given (none: replicated); others take their
producers'. run_host_mesh simulates the devices in this process (every device's shards in,
every device's shards out, None for a device off a tensor's mesh); run takes and returns
this rank's shards (CUDA tensors) and joins the process group on first use (RANK,
WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/MASTER_PORT as torchrun sets them).

torch.distributed: cfuser cannot use a ProcessGroupNCCL's communicator, which PyTorch does not
expose through a public API; it bootstraps its own NCCL communicator from the same
environment, its store on MASTER_PORT + 1 so both groups live side by side.
"""
from __future__ import annotations

import ctypes
from ctypes import POINTER, c_char_p, c_int, c_size_t, c_void_p
from typing import Any, List, Optional, Sequence

from . import _capi, _dlpack
from ._tensor import Tensor
from .types import CfuserError, InvalidArgumentError, error_for

MAX_DEVICES = 64


class _CMesh(ctypes.Structure):
    _fields_ = [("ndims", c_int), ("shape", c_int * 2), ("devices", c_int * MAX_DEVICES)]


def _bind() -> None:
    lib = _capi.lib
    for name, res, args in (
        ("cf_device_mesh_init", c_int, [POINTER(_CMesh), c_int, POINTER(c_int), POINTER(c_int)]),
        ("cf_tv_set_device_mesh", c_int, [c_void_p, c_void_p, POINTER(_CMesh)]),
        ("cf_propagate_shardings", c_int, [c_void_p]),
        ("cf_shard_tensor", c_int, [c_void_p, c_void_p, c_void_p, c_int, POINTER(c_void_p)]),
        ("cf_mesh_executor_create", c_void_p, [c_void_p, c_void_p]),
        ("cf_mesh_executor_destroy", None, [c_void_p]),
        ("cf_mesh_executor_error", c_char_p, [c_void_p]),
        ("cf_mesh_run_host", c_int, [c_void_p, c_int, c_int, c_void_p, c_int, c_void_p]),
        ("cf_mesh_run", c_int, [c_void_p, c_void_p, c_int, c_void_p, c_int, c_void_p]),
        ("cf_mesh_executor_num_segments", c_int, [c_void_p]),
        ("cf_mesh_executor_num_communications", c_int, [c_void_p]),
        ("cf_nccl_available", ctypes.c_bool, [POINTER(c_char_p)]),
        ("cf_comm_init", c_int, [POINTER(c_void_p), c_int, c_char_p, c_size_t]),
        ("cf_comm_destroy", None, [c_void_p]),
        ("cf_comm_rank", c_int, [c_void_p]),
        ("cf_comm_size", c_int, [c_void_p]),
    ):
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args


_bind()


class DeviceMesh:
    """A 1-D or 2-D mesh of device ids (nvFuser's DeviceMesh): a sequence of ints, a nested
    sequence of rows, or anything with .tolist() (a torch or NumPy array)."""

    def __init__(self, devices: Any) -> None:
        rows = devices.tolist() if hasattr(devices, "tolist") else list(devices)
        nested = bool(rows) and isinstance(rows[0], (list, tuple))
        flat = [int(d) for r in rows for d in r] if nested else [int(d) for d in rows]
        shape = [len(rows), len(rows[0])] if nested else [len(flat)]
        if nested and any(len(r) != shape[1] for r in rows):
            raise InvalidArgumentError("DeviceMesh: the rows of a 2-D mesh have different lengths")
        self._c = _CMesh()
        st = _capi.lib.cf_device_mesh_init(ctypes.byref(self._c), len(shape), (c_int * 2)(*shape),
                                           (c_int * max(len(flat), 1))(*flat))
        if st:
            raise InvalidArgumentError(f"DeviceMesh: {devices!r} is not a mesh (1 or 2 axes, at most {MAX_DEVICES} "
                                       "distinct ids >= 0)")
        self.shape, self.devices = tuple(shape), flat

    @property
    def size(self) -> int:
        return len(self.devices)

    def __repr__(self) -> str:
        if len(self.shape) == 1:
            return "DeviceMesh{" + " ".join(map(str, self.devices)) + "}"
        rows = [self.devices[i:i + self.shape[1]] for i in range(0, self.size, self.shape[1])]
        return "DeviceMesh{" + "".join("{" + " ".join(map(str, r)) + "}" for r in rows) + "}"


def _fd_check(fd: Any, status: int, what: str) -> None:
    if status:
        raise fd._error(what)


def set_device_mesh(fd: Any, t: Tensor, mesh: DeviceMesh) -> None:
    """Places t on mesh (fd.sched.set_device_mesh calls this)."""
    _fd_check(fd, _capi.lib.cf_tv_set_device_mesh(fd._f, fd._tv(t, "set_device_mesh"), ctypes.byref(mesh._c)),
              "set_device_mesh")


def shard_tensor(fd: Any, array: Any, t: Tensor, device: int) -> Any:
    """The shard of `array` (t's whole tensor, host memory) that device holds, in the
    array's library (nvFuser's shard_tensor)."""
    keep, ptr, _ = _dlpack.export(array, "input", 0)
    out = c_void_p()
    # a DLManagedTensor begins with its DLTensor: the export's pointer is both
    _fd_check(fd, _capi.lib.cf_shard_tensor(fd._f, fd._tv(t, "shard_tensor"), ptr, device, ctypes.byref(out)),
              "shard_tensor")
    del keep
    return _dlpack.framework_of(array).adopt(_dlpack.DLPackTensor(out.value))


class _Comm:
    """The process group of this process (one, made on first use)."""

    handle: Optional[int] = None

    @classmethod
    def get(cls) -> int:
        if cls.handle is None:
            h, err = c_void_p(), ctypes.create_string_buffer(512)
            st = _capi.lib.cf_comm_init(ctypes.byref(h), 0, err, 512)
            if st:
                _capi.lib.cf_comm_destroy(h)
                raise error_for(st, f"multidevice: {err.value.decode()}")
            cls.handle = h.value
        return cls.handle


def nccl_available() -> Optional[str]:
    """None when NCCL loads here, else why not ("NCCL unavailable: ...")."""
    why = c_char_p()
    return None if _capi.lib.cf_nccl_available(ctypes.byref(why)) else why.value.decode()


class MultiDeviceExecutor:
    """Runs a FusionDefinition sharded over its meshes (define and run per device)."""

    def __init__(self, fd: Any) -> None:
        fd._check_ready("MultiDeviceExecutor")
        fd._freeze_schedule()
        if not fd._plain:
            raise InvalidArgumentError("MultiDeviceExecutor: the definition's inputs and outputs must be plain "
                                       "tensors (no scalars, views, aliases or duplicated outputs)")
        self._fd = fd
        self._x = _capi.lib.cf_mesh_executor_create(fd._f, None)
        if not self._x:
            raise MemoryError("MultiDeviceExecutor: out of memory")
        self._nin, self._nout = len(fd._c_inputs), len(fd._c_outputs)

    def __del__(self) -> None:
        if getattr(self, "_x", None):
            _capi.lib.cf_mesh_executor_destroy(self._x)
            self._x = None

    def _raise(self, st: int) -> None:
        raise error_for(st, _capi.lib.cf_mesh_executor_error(self._x).decode())

    def run_host_mesh(self, inputs: Sequence[Sequence[Any]]) -> List[List[Any]]:
        """inputs[d]: device d's shards (None off an input's mesh); returns each device's
        output shards (None off an output's mesh)."""
        n, keep, ptrs, like = len(inputs), [], [], None
        for d, shards in enumerate(inputs):
            if len(shards) != self._nin:
                raise InvalidArgumentError(f"run_host_mesh: device {d} gives {len(shards)} inputs, not {self._nin}")
            for i, a in enumerate(shards):
                if a is None:
                    ptrs.append(None)
                    continue
                k, p, _ = _dlpack.export(a, "input", i)
                keep.append(k)
                ptrs.append(p)
                like = like if like is not None else a
        outs = (c_void_p * max(n * self._nout, 1))()
        st = _capi.lib.cf_mesh_run_host(self._x, n, self._nin, _dlpack.pointer_array(ptrs), self._nout, outs)
        if st:
            self._raise(st)
        fw = _dlpack.framework_of(like)
        return [[fw.adopt(_dlpack.DLPackTensor(outs[d * self._nout + o])) if outs[d * self._nout + o] else None
                 for o in range(self._nout)] for d in range(n)]

    def run(self, inputs: Sequence[Any]) -> List[Any]:
        """This rank's shards in (CUDA tensors), its output shards out."""
        keep, ptrs = [], []
        for i, a in enumerate(inputs):
            k, p, _ = _dlpack.export(a, "input", i)
            keep.append(k)
            ptrs.append(p)
        outs = (c_void_p * max(self._nout, 1))()
        st = _capi.lib.cf_mesh_run(self._x, _Comm.get(), len(ptrs), _dlpack.pointer_array(ptrs), self._nout, outs)
        if st:
            self._raise(st)
        fw = _dlpack.framework_of(inputs[0]) if inputs else _dlpack.GENERIC
        return [fw.adopt(_dlpack.DLPackTensor(outs[o])) if outs[o] else None for o in range(self._nout)]

    @property
    def num_communications(self) -> int:
        return int(_capi.lib.cf_mesh_executor_num_communications(self._x))

    @property
    def num_segments(self) -> int:
        return int(_capi.lib.cf_mesh_executor_num_segments(self._x))


__all__ = ["DeviceMesh", "MultiDeviceExecutor", "set_device_mesh", "shard_tensor", "nccl_available", "CfuserError"]
