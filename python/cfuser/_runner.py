"""What execute calls to run a definition on one backend: a compiled executor (a definition
scheduled by hand) or a define-and-run cache (an unscheduled one).

Both kinds take the same arguments, (handle, [stream,] ninputs, inputs, noutputs, outputs),
so a runner is the handle and its two C functions looked up once; execute and the torch
fast path make one call through it, whichever kind it is, and nothing else per call.

- ``ExecutorRunner``: ``cf_executor_run(_async)`` of one compiled kernel, scheduled by the
  user.
- ``CacheRunner``: ``cf_fusion_execute(_async)`` of a ``cf_fusion_cache``
  (include/cfuser/execute.h): each new input signature is planned by the scheduler
  registry (reduction, normalization, transpose, pointwise, ..., and last a parallel
  kernel per op), segmented when no scheduler takes the whole fusion, compiled (or given a
  kernel compiled for another signature whose plan agrees) and kept; later calls with the
  signature only run.
  Its cache has no shared kernel cache (each cf_fusion_cache owns its executors).

Each runner has a lock that execute holds across the call and the reading of its error:
a definition may execute from several threads at once.
"""
from __future__ import annotations

import threading
from typing import Any, Dict, List, Optional

from . import _capi


class ExecutorRunner:
    """One compiled cf_executor."""

    __slots__ = ("handle", "backend", "run", "run_async", "label", "lock")
    cached = False

    def __init__(self, handle: _capi.ExecutorHandle, backend: int, label: str) -> None:
        lib = _capi.lib
        self.handle, self.backend, self.label = handle, backend, label
        self.lock = threading.Lock()  # an executor runs one call at a time
        self.run, self.run_async = lib.cf_executor_run, lib.cf_executor_run_async

    def error(self) -> str:
        return (_capi.lib.cf_executor_error(self.handle) or b"").decode()

    def executors(self) -> List[_capi.ExecutorHandle]:
        return [self.handle]

    def schedulers(self) -> List[str]:
        return [self.label]  # "user"

    def destroy(self) -> None:
        _capi.lib.cf_executor_destroy(self.handle)


class CacheRunner:
    """One cf_fusion_cache: define and run."""

    __slots__ = ("handle", "backend", "run", "run_async", "lock")
    cached = True

    def __init__(self, f: _capi.FusionHandle, backend: int) -> None:
        lib = _capi.lib
        opts = _capi.ExecutorOptions(backend, None, False, None)
        handle = lib.cf_fusion_cache_create(f, opts)
        if not handle:
            raise MemoryError("execute: out of memory creating a fusion cache")
        self.handle, self.backend = handle, backend
        self.run, self.run_async = lib.cf_fusion_execute, lib.cf_fusion_execute_async
        # cf_fusion_execute takes turns itself; this lock keeps a call's error message and
        # last segments its own until read
        self.lock = threading.Lock()

    def error(self) -> str:
        return (_capi.lib.cf_fusion_cache_error(self.handle) or b"").decode()

    def executors(self) -> List[_capi.ExecutorHandle]:
        """The executor of each segment of the last call, in the order they ran."""
        lib = _capi.lib
        return [lib.cf_fusion_cache_last_executor(self.handle, i)
                for i in range(lib.cf_fusion_cache_last_segments(self.handle))]

    def schedulers(self) -> List[str]:
        lib = _capi.lib
        return [lib.cf_fusion_cache_last_scheduler(self.handle, i).decode()
                for i in range(lib.cf_fusion_cache_last_segments(self.handle))]

    def kernel_text(self, i: int) -> Optional[str]:
        """Segment i's CUDA kernel of the last call; None with the error in error()."""
        status, text = _capi.print_to_string(_capi.lib.cf_fusion_cache_print_kernel, self.handle, i)
        return None if status else text

    def info(self) -> Dict[str, Any]:
        lib, h = _capi.lib, self.handle
        return {"entries": lib.cf_fusion_cache_num_entries(h), "kernels": lib.cf_fusion_cache_num_kernels(h),
                "hits": lib.cf_fusion_cache_hits(h), "misses": lib.cf_fusion_cache_misses(h),
                "schedulers": self.schedulers()}

    def destroy(self) -> None:
        _capi.lib.cf_fusion_cache_destroy(self.handle)
