"""fd.sched: the scheduling API of the C library (include/cfuser/schedule.h) for users who
schedule by hand, as nvFuser's fd.sched does.

Scheduling is allowed from the end of the definition until the first execute (or
print_kernel), which freezes the schedule. A definition that calls none of these is
scheduled automatically at its first execute: by cf_schedule_pointwise when every op is
elementwise, else left serial (correct, not fast, until cfuser has a reduction
scheduler). Axis arguments may be negative, counting from the end.
"""
from __future__ import annotations

import ctypes
import sys
from typing import TYPE_CHECKING, Dict, Optional, Sequence, TextIO, Union

from . import _capi
from ._tensor import Tensor
from .types import InvalidArgumentError, MemoryType, ParallelType

if TYPE_CHECKING:
    from .fusion_definition import FusionDefinition
    from .multidevice import DeviceMesh


def _ints(values: Sequence[int]) -> "ctypes.Array[ctypes.c_int]":
    return (ctypes.c_int * max(len(values), 1))(*[int(v) for v in values])


class Sched:
    """The scheduling primitives of one FusionDefinition (fd.sched)."""

    def __init__(self, fd: "FusionDefinition") -> None:
        self._fd = fd

    def _tv(self, t: Tensor, what: str) -> int:
        self._fd._check_schedulable(what)
        return self._fd._tv(t, what)

    def _call(self, what: str, fn_name: str, *args: object) -> None:
        for a in args:  # ctypes wraps ints silently: an axis of 2**32 would be axis 0
            if isinstance(a, int) and not isinstance(a, bool) and not -2**31 <= a < 2**31:
                raise InvalidArgumentError(f"{what}: {a} is out of range for a C int")
        try:
            status = getattr(_capi.lib, fn_name)(self._fd._f, *args)
        except ctypes.ArgumentError as e:  # e.g. a float axis, a factor past int64
            raise InvalidArgumentError(f"{what}: {e}") from None
        self._fd._check(status)

    def split(self, t: Tensor, axis: int, factor: int, inner_split: bool = True) -> None:
        """axis{N} -> outer, inner: inner has `factor` iterations (or outer does, with
        inner_split=False)."""
        h = self._tv(t, "split")
        if not isinstance(factor, int) or not -2**63 <= factor < 2**63:
            raise InvalidArgumentError(f"split: factor {factor!r} is not a 64-bit integer")
        self._call("split", "cf_split" if inner_split else "cf_split_outer", h, axis, ctypes.c_int64(factor))

    def merge(self, t: Tensor, axis: int) -> None:
        """Axes axis and axis + 1 become one."""
        self._call("merge", "cf_merge", self._tv(t, "merge"), axis)

    def reorder(self, t: Tensor, old2new: Union[Dict[int, int], Sequence[int]]) -> None:
        """Moves axes: a dict {old: new} (the others keep their order) or a whole
        permutation, axis i going to position old2new[i]."""
        h = self._tv(t, "reorder")
        if isinstance(old2new, dict):
            pairs = [v for kv in old2new.items() for v in kv]
            self._call("reorder", "cf_reorder", h, len(old2new), _ints(pairs))
        else:
            self._call("reorder", "cf_reorder_all", h, len(old2new), _ints(old2new))

    def swizzle_xor(self, t: Tensor, x: int, y: int) -> None:
        """(i, j) -> (i, i ^ j) on axes x and y (equal powers of two)."""
        self._call("swizzle_xor", "cf_swizzle_xor", self._tv(t, "swizzle_xor"), x, y)

    def parallelize(self, t: Tensor, axis: int, parallel_type: ParallelType) -> None:
        """Binds a loop axis to threads, blocks, vector lanes or unrolling."""
        self._call("parallelize", "cf_parallelize", self._tv(t, "parallelize"), axis,
                   int(ParallelType(parallel_type)))

    def set_memory_type(self, t: Tensor, memory_type: MemoryType) -> None:
        """Places t in local, shared, global or tensor memory."""
        self._call("set_memory_type", "cf_set_memory_type", self._tv(t, "set_memory_type"),
                   int(MemoryType(memory_type)))

    def spill_to_shared(self, t: Tensor, reg_elems: int) -> None:
        """Keeps the first reg_elems elements of each thread's allocation of the Local tensor
        t in registers and the rest in shared memory (filled by cp.async where t copies 16
        bytes from global memory); 0 keeps all in registers."""
        self._call("spill_to_shared", "cf_spill_to_shared", self._tv(t, "spill_to_shared"), int(reg_elems))

    def set_allocation_domain(self, t: Tensor, axes: Sequence[int],
                              contiguity: Optional[Sequence[Optional[bool]]] = None) -> None:
        """The allocation domain: loop axes of t in the given order, contiguity per axis
        (True, False, or None for a broadcast axis; all True when omitted)."""
        h = self._tv(t, "set_allocation_domain")
        ids = []
        for a in axes:
            ax = _capi.lib.cf_tv_axis(h, int(a))
            if not ax:
                raise InvalidArgumentError(f"set_allocation_domain: axis {a} out of range for {t.name} "
                                           f"of {t.naxes} loop axes")
            ids.append(ax)
        flags = [1] * len(ids) if contiguity is None else [-1 if c is None else int(bool(c)) for c in contiguity]
        if len(flags) != len(ids):
            raise InvalidArgumentError(f"set_allocation_domain: {len(ids)} axes but {len(flags)} contiguity flags "
                                       f"for {t.name}")
        id_arr = _capi.handle_array(_capi.IdHandle, ids)
        flag_arr = (ctypes.c_int8 * max(len(flags), 1))(*flags)
        self._call("set_allocation_domain", "cf_set_allocation_domain", h, len(ids), id_arr, flag_arr)

    def set_allocation_to_loop(self, t: Tensor, contiguous: bool = True) -> None:
        """The allocation domain becomes the current loop domain."""
        self._call("set_allocation_to_loop", "cf_set_allocation_to_loop", self._tv(t, "set_allocation_to_loop"),
                   bool(contiguous))

    def set_tmem_dim_sep_pos(self, t: Tensor, pos: int) -> None:
        """Tensor memory: allocation axes left of pos address lanes, the others columns."""
        self._call("set_tmem_dim_sep_pos", "cf_set_tmem_dim_sep_pos", self._tv(t, "set_tmem_dim_sep_pos"), pos)

    def group_tmem(self, tensors: Sequence[Tensor]) -> None:
        """Tensor memory: the tensors share one region, side by side in its columns."""
        hs = [self._tv(t, "group_tmem") for t in tensors]
        self._fd._check(_capi.lib.cf_fusion_group_tmem(self._fd._f, len(hs), _capi.handle_array(_capi.TvHandle, hs)))

    # cf_mma_macro's values, by the instruction's name.
    MMA_MACROS = {"m16n8k16": 0, "wgmma_m64nNk16": 1, "tcgen05_m128nNk16": 2}

    def mma_tile(self, t: Tensor, axis: int, macro: str = "m16n8k16") -> None:
        """Axes axis, axis + 1, axis + 2 of the sum t are a tensor-core instruction's M, N and K
        tiles; they become the accumulator's fragment layout (lane, M-, N-registers, K).
        "wgmma_m64nNk16": Hopper's warpgroup wgmma, N the tile's extent (a multiple of 8 up
        to 256), threadIdx.x launched as 128, operands in shared memory. "tcgen05_m128nNk16":
        Blackwell's tcgen05.mma, N a multiple of 16 up to 256, t in tensor memory (the three
        axes stay as they are, on MMA), operands in shared memory."""
        if macro not in self.MMA_MACROS:
            raise ValueError(f"mma_tile: unknown instruction {macro!r}; known: {', '.join(self.MMA_MACROS)}")
        self._call("mma_tile", "cf_mma_tile", self._tv(t, "mma_tile"), axis, self.MMA_MACROS[macro])

    def circular_buffer(self, t: Tensor, stages: int, prefetch: Optional[int] = None) -> None:
        """The shared tile t, computed at a serial loop, gets `stages` buffers: each iteration
        fills the tile of `prefetch` iterations later (default stages - 1; nvFuser's
        circularBuffer(stages, prefetch_distance)), cp.async for 16-byte copies."""
        if prefetch is None:
            self._call("circular_buffer", "cf_circular_buffer", self._tv(t, "circular_buffer"), stages)
        else:
            self._call("circular_buffer", "cf_circular_buffer_prefetch", self._tv(t, "circular_buffer"), stages,
                       prefetch)

    def tma_load(self, t: Tensor) -> None:
        """The circular-buffered shared tile t, a copy of a fusion input, is filled by TMA
        boxes (Hopper's cp.async.bulk.tensor; nvFuser's CpAsyncBulkTensorTile) that one
        thread issues, its readers waiting on an mbarrier per stage; the lowering finds the
        box and swizzle from t's schedule and refuses a layout no box writes."""
        self._call("tma_load", "cf_tma_load", self._tv(t, "tma_load"))

    def warp_specialize(self, t: Tensor, parallel_type: ParallelType = ParallelType.block_y) -> None:
        """The TMA tile t's fills move into a producer slice of threads along pt (one more
        value of threadIdx.y: a producer warpgroup), which fills each stage as soon as the
        readers release it (nvFuser's circularBuffer(..., WarpSpecialized(ParallelType.TIDy)))."""
        self._call("warp_specialize", "cf_warp_specialize", self._tv(t, "warp_specialize"),
                   int(ParallelType(parallel_type)))

    def cache_after(self, t: Tensor) -> Tensor:
        """A local copy of t that every consumer of t reads instead (for vector loads)."""
        h = self._tv(t, "cache_after")
        return self._fd._new_tensor("cache_after", _capi.lib.cf_cache_after(self._fd._f, h), t.extents)

    def cache_before(self, t: Tensor) -> Tensor:
        """A local tensor t's defining op now writes; t becomes its copy (for vector stores)."""
        h = self._tv(t, "cache_before")
        return self._fd._new_tensor("cache_before", _capi.lib.cf_cache_before(self._fd._f, h), t.extents)

    def rfactor(self, t: Tensor, axes: Sequence[int]) -> Tensor:
        """nvFuser's rFactor: the reduction t's loop axes `axes` go to a new partial
        reduction, which is returned; t reduces what is left."""
        h = self._tv(t, "rfactor")
        arr = (ctypes.c_int * max(len(axes), 1))(*axes)
        return self._fd._new_tensor("rfactor", _capi.lib.cf_rfactor(self._fd._f, h, len(axes), arr), t.extents)

    def schedule_pointwise(self) -> None:
        """nvFuser's pointwise scheduler on the whole (unscheduled, elementwise) fusion."""
        self._fd._check_schedulable("schedule_pointwise")
        self._call("schedule_pointwise", "cf_schedule_pointwise")

    def inline_at(self, t: Tensor, pos: int, best_effort: bool = False) -> None:
        """Inlines t into its consumers at loop position pos (clamped with best_effort)."""
        h = self._tv(t, "inline_at")
        self._call("inline_at", "cf_inline_at_best_effort" if best_effort else "cf_inline_at", h, pos)

    def inline_most(self) -> None:
        """Inlines every tensor as deep as legal."""
        self._fd._check_schedulable("inline_most")
        self._call("inline_most", "cf_inline_most")

    def inline_all_at(self, ref: Tensor, pos: int) -> None:
        """Inlines every tensor at the position matching ref's position pos."""
        self._call("inline_all_at", "cf_inline_all_at", self._tv(ref, "inline_all_at"), pos)

    def compute_at(self, producer: Tensor, consumer: Tensor, pos: int) -> None:
        """nvFuser's legacy computeAt: propagates consumer's transforms up to pos, inlines."""
        hp, hc = self._tv(producer, "compute_at"), self._tv(consumer, "compute_at")
        self._call("compute_at", "cf_compute_at", hp, hc, pos)

    def propagate_transforms(self, ref: Tensor, checked: bool = False) -> None:
        """Replays ref's loop-domain transforms onto every other tensor (checked: and
        verifies that they match)."""
        h = self._tv(ref, "propagate_transforms")
        self._call("propagate_transforms",
                   "cf_propagate_transforms_checked" if checked else "cf_propagate_transforms", h)

    def propagate_transforms_to(self, ref: Tensor, pos: int = -1, tensors: Optional[Sequence[Tensor]] = None) -> None:
        """Replays only ref's first pos loop axes (nvFuser's TransformPropagator with a
        position) onto the given tensors (all when None)."""
        h = self._tv(ref, "propagate_transforms_to")
        hs = [self._tv(t, "propagate_transforms_to") for t in tensors or ()]
        self._call("propagate_transforms_to", "cf_propagate_transforms_to", h, pos, len(hs),
                   (ctypes.c_void_p * max(len(hs), 1))(*hs))

    def parallelize_all_like(self, ref: Tensor, types: Optional[Sequence[ParallelType]] = None) -> None:
        """Copies ref's parallel types (all, or only those listed) onto the mapped axes."""
        h = self._tv(ref, "parallelize_all_like")
        ts = [int(ParallelType(p)) for p in types or ()]
        self._call("parallelize_all_like", "cf_parallelize_all_like", h, len(ts), _ints(ts))

    def set_device_mesh(self, t: Tensor, mesh: "DeviceMesh") -> None:
        """Places t on a device mesh (cfuser.multidevice); nvFuser's x.set_device_mesh(mesh)."""
        from .multidevice import set_device_mesh
        self._tv(t, "set_device_mesh")
        set_device_mesh(self._fd, t, mesh)

    _set_device_mesh = set_device_mesh  # nvFuser's legacy spelling

    def transforms_text(self) -> str:
        """Each tensor's logical domain, transform history and loop domain."""
        return self._fd._print(_capi.lib.cf_fusion_print_transforms)

    def print_transforms(self, file: Optional[TextIO] = None) -> None:
        """Prints transforms_text() to file (standard output by default)."""
        print(self.transforms_text(), end="", file=file or sys.stdout)
