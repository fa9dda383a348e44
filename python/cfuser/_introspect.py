"""nvFuser's introspection calls on a FusionDefinition, answered from cfuser's own: the
math (fusion_ir), the kernels of the last execute (last_cuda_code,
last_scheduled_fusion_ir), its segments (segment: what define and run cut the fusion
into for some inputs, with each segment's scheduler and kernel), the definition's inputs,
outputs and input sizes, and what the library printed during a call
(execute(..., capture_debug_output=True), then debug_output()).

Key decision: where nvFuser answers with its internal record numbers (inputs(), outputs(),
extents() are indices into its FusionState) cfuser answers with the objects themselves
(Tensors, Scalars), which is what those numbers are used to find.
"""
from __future__ import annotations

import os
import sys
import tempfile
from typing import Any, Dict, List, Optional, Sequence

from . import _capi
from ._tensor import Scalar, Tensor
from .types import InvalidArgumentError


class Segment:
    """One kernel (or view) of a define-and-run execute: its index, the scheduler that made
    it, its generated source and its launch ({"grid", "block", "smem"}; None for a view)."""

    def __init__(self, index: int, scheduler: str, source: str, launch: Optional[Dict[str, Any]]) -> None:
        self.index, self.scheduler, self.source, self.launch = index, scheduler, source, launch

    def __repr__(self) -> str:
        return f"Segment({self.index}, {self.scheduler!r})"


class IntrospectMixin:
    """fusion_ir, last_cuda_code, last_scheduled_fusion_ir, segment, inputs, outputs,
    extents, debug_output."""

    def fusion_ir(self) -> str:
        """The unscheduled fusion's math, in nvFuser's notation (math_text())."""
        if not getattr(self, "_defined", False):
            raise InvalidArgumentError("fusion_ir: Invalid fusion definition! (nothing is defined yet)")
        return self.math_text()  # type: ignore[attr-defined]

    def last_cuda_code(self, intrinsic_code: bool = False, **_: Any) -> str:
        """The CUDA kernel(s) of the last execute (each segment's after a comment line)."""
        if getattr(self, "_last", None) is None:
            raise InvalidArgumentError("last_cuda_code: the definition has never been executed")
        return self.kernel_text()  # type: ignore[attr-defined]

    def last_scheduled_fusion_ir(self, tensor_transforms: bool = False, **_: Any) -> str:
        """The scheduled fusion of the last execute: a hand schedule's math (and each
        tensor's transforms with tensor_transforms), or define and run's kernels, which
        print the schedule each segment got."""
        if getattr(self, "_last", None) is None:
            raise InvalidArgumentError("last_scheduled_fusion_ir: the definition has never been executed")
        if self._last.cached:  # type: ignore[attr-defined]
            return self.kernel_text()  # type: ignore[attr-defined]
        text = self.math_text()  # type: ignore[attr-defined]
        return text + self.sched.transforms_text() if tensor_transforms else text  # type: ignore[attr-defined]

    def segment(self, inputs: Sequence[Any]) -> List[Segment]:
        """What define and run makes of the definition for these inputs (running it once):
        one Segment per kernel or view, in the order they run. nvFuser's segment() returns
        a FusionDefinition per segment; here each segment's scheduler, generated source and
        launch say what it is (fd.show("segments") draws them)."""
        self.execute(inputs)  # type: ignore[attr-defined]
        r = self._last  # type: ignore[attr-defined]
        lib = _capi.lib
        out = []
        for i, (e, name) in enumerate(zip(r.executors(), r.schedulers())):
            if not e:
                out.append(Segment(i, name, "", None))
                continue
            p = lib.cf_executor_last_launch_params(e)
            out.append(Segment(i, name, (lib.cf_executor_source(e) or b"").decode(),
                               {"grid": tuple(p.grid), "block": tuple(p.block), "smem": int(p.smem)}))
        return out

    def inputs(self) -> List[Any]:
        """The definition's inputs in execute's order: Tensors, Scalars (scalar inputs)
        and Vectors (define_vector inputs)."""
        return [x for _, x in self._inputs]  # type: ignore[attr-defined]

    def outputs(self) -> List[Tensor]:
        """The tensors added as outputs, in order (aliased ones included)."""
        out = []
        for entry in self._outputs:  # type: ignore[attr-defined]
            if entry[0] == "input":
                out.append(self._inputs[entry[1]][1])  # type: ignore[attr-defined]
            elif entry[0] == "view":
                out.append(entry[3])
            else:
                out.append(self._c_outputs[entry[1]])  # type: ignore[attr-defined]
        return out

    def extents(self) -> List[Scalar]:
        """The sizes of every tensor input, input by input (nvFuser's extents())."""
        return [t.size(d) for kind, t in self._inputs if kind == "tensor" for d in range(t.ndim)]  # type: ignore[attr-defined]

    def debug_output(self) -> Optional[str]:
        """What the library printed on standard error during the last
        execute(..., capture_debug_output=True) (None when none captured): the dumps
        CFUSER_DUMP asks for, e.g. CFUSER_DUMP=segments or kernel."""
        return self._debug_output  # type: ignore[attr-defined]

    def _captured(self, inputs: Sequence[Any]) -> List[Any]:
        """execute with standard error (file descriptor 2) sent to a file, then read back."""
        sys.stderr.flush()
        saved = os.dup(2)
        with tempfile.TemporaryFile(mode="w+b") as tmp:
            os.dup2(tmp.fileno(), 2)
            try:
                return self._execute(inputs)  # type: ignore[attr-defined]
            finally:
                os.dup2(saved, 2)
                os.close(saved)
                tmp.seek(0)
                self._debug_output = tmp.read().decode("utf-8", "replace")
