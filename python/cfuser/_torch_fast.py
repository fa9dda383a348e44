"""The cached execute of PyTorch CUDA tensors, kept to the few calls it needs.

execute's general path asks, for every array, which library it belongs to and how that
library exports, allocates and orders streams; on PyTorch CUDA tensors that Python work
costs more than the launch itself. Once a definition has run on torch CUDA tensors,
execute first tries this path: every input a plain torch CUDA tensor on device 0 without
grad (anything else, and every error, goes to the general path, which reports it), each
exported with torch's C exporter, the outputs allocated with Tensor.new_empty (no dtype
or device parsing) in shapes computed by a precompiled rule, and one asynchronous launch
on torch's current stream through the definition's runner (_runner.py: a compiled
executor or a define-and-run cache, the same call either way).
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Tuple

from . import _capi

ShapeRule = Tuple[Tuple[Any, ...], Any]  # (per-axis int or (input, axis), torch dtype)


class TorchFastPath:
    """The torch objects and per-definition rules the fast path needs, looked up once."""

    def __init__(self, torch: Any, out_rules: Sequence[ShapeRule], runner: Any) -> None:
        self.runner = runner  # what runs the CUDA backend (replaced when it falls back)
        self.tensor_type = torch.Tensor
        self.to_dlpack: Callable[[Any], object] = torch._C._to_dlpack
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        self.stream: Callable[[int], int] = raw if raw is not None else (
            lambda dev: torch.cuda.current_stream(dev).cuda_stream)
        self.out_rules = list(out_rules)
        self.capsule_get = _capi.capsule_get_fast

    def run(self, inputs: Sequence[Any], in_arr: Any, out_arr: Any) -> Tuple[Optional[List[Any]], int]:
        """(outputs, cfuser's status of the launch); (None, 0) when the inputs are not all
        plain torch CUDA tensors of one device or their ranks do not fit (the caller then
        takes the general path, which reports what is wrong)."""
        keep = []
        tensor_type, to_dlpack, get = self.tensor_type, self.to_dlpack, self.capsule_get
        device = inputs[0].get_device() if inputs and type(inputs[0]) is tensor_type else -1
        for i, x in enumerate(inputs):
            if type(x) is not tensor_type or not x.is_cuda or x.requires_grad or x.get_device() != device:
                return None, 0
            cap = to_dlpack(x)
            keep.append(cap)
            in_arr[i] = get(cap, b"dltensor")
        first = inputs[0]
        outs = []
        for i, (shape, dtype) in enumerate(self.out_rules):
            try:
                sizes = tuple(e if type(e) is int else inputs[e[0]].shape[e[1]] for e in shape)
            except IndexError:
                return None, 0
            out = first.new_empty(sizes, dtype=dtype)
            cap = to_dlpack(out)
            keep.append(cap)
            out_arr[i] = get(cap, b"dltensor")
            outs.append(out)
        r = self.runner
        status = r.run_async(r.handle, self.stream(device), len(inputs), in_arr, len(outs), out_arr)
        return outs, status
