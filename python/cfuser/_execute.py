"""One execute of a FusionDefinition: the call's C arguments and its results.

A definition's inputs as the user gives them to execute (tensors, numbers for scalar
inputs, lists for define_vector inputs) are not always the C fusion's inputs one to one:
a tensor input with broadcast axes is passed as a view without them, an empty tensor with
row-major strides, a scalar as a 0-d array of the inputs' library, and random ops without
rng_seed/rng_offset add inputs of their own (the generator's seed and offsets). The C
outputs are the distinct tensors added as outputs that are not inputs; an output added
twice, an input added as an output, an output aliased into an input (alias_input: written
back into it, and hidden) and an output with a stride order (copied into that memory
order) are made from them here.

Key decision: everything a call builds (pointer arrays, views, capsules) is local to the
call, so one definition runs from several threads at once; the C calls of one runner take
turns (its lock, and cf_fusion_cache's own), and each call's error message is read under
that lock.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from . import _capi, _dlpack, _packed
from ._inputs import InputSpec, View, check_array
from ._tensor import extent_value
from .types import ARRAY_DTYPE_NAMES, PACKED_DTYPES, DataType, InvalidArgumentError, UnsupportedError

if TYPE_CHECKING:
    from .fusion_definition import FusionDefinition

# ---- the generator of random ops without rng_seed / rng_offset --------------------------------

_rng_lock = threading.Lock()
_rng = {"seed": 0x5EED_CF05E, "offset": 0}


def manual_seed(seed: int) -> None:
    """Seeds the generator of random ops given no rng_seed and rng_offset: later executes
    draw the same numbers in the same order (each call takes fresh offsets)."""
    with _rng_lock:
        _rng["seed"], _rng["offset"] = int(seed) & (2**63 - 1), 0


def _take_offsets(n: int) -> Tuple[int, int]:
    with _rng_lock:
        base = _rng["offset"]
        _rng["offset"] += n
        return _rng["seed"], base


# ---- arguments ------------------------------------------------------------------------------------


def c_arguments(fd: "FusionDefinition", inputs: Sequence[Any]) -> List[Any]:
    """The C inputs' values in C order: arrays, numbers (scalars) and the generator's."""
    noffsets = sum(1 for slot in fd._c_inputs if slot[0] == "offset")
    seed, base = _take_offsets(noffsets) if noffsets else (0, 0)
    out = []
    for slot in fd._c_inputs:
        kind = slot[0]
        if kind == "user":
            out.append(inputs[slot[1]])
        elif kind == "vector":
            v = inputs[slot[1]]
            if not isinstance(v, (list, tuple)) or len(v) != slot[3]:
                raise InvalidArgumentError(f"execute: input {slot[1]} is a vector of {slot[3]} sizes; give a list "
                                           f"or tuple of {slot[3]} ints, not {v!r}")
            out.append(v[slot[2]])
        else:
            out.append(seed if kind == "seed" else base + slot[1])
    return out


def first_tensor(args: Sequence[Any], dtypes: Dict[int, DataType]) -> Optional[Any]:
    return next((x for i, x in enumerate(args) if i not in dtypes), None)


def device_like(device: Any) -> Optional[Any]:
    """execute's device for a definition without tensor inputs: None for the host ("cpu"),
    else an empty torch tensor on that CUDA device ("cuda" and "cuda:N" as torch reads them, N,
    torch.device) whose library and device the scalars and outputs follow. A run goes to the
    device of its tensors (one per run: tensors on two devices are refused, named)."""
    kind = getattr(device, "type", device)
    index = getattr(device, "index", None) if hasattr(device, "type") else None
    if isinstance(kind, str) and kind.startswith("cuda:"):
        kind, index = "cuda", int(kind[5:])
    elif isinstance(kind, int) and not isinstance(kind, bool):
        kind, index = "cuda", kind
    if kind == "cpu":
        return None
    if kind != "cuda":
        raise InvalidArgumentError(f"execute: device {device!r} is neither \"cpu\" nor a CUDA device")
    try:
        import torch
    except ImportError:
        raise UnsupportedError(f"execute: device {device!r} without tensor inputs returns torch CUDA tensors, "
                               "and torch is not installed") from None
    return torch.empty(0, device="cuda" if index is None else f"cuda:{index}")


def scalar_arrays(args: List[Any], dtypes: Dict[int, DataType], like: Any, host: Any = ()) -> None:
    """Scalars given as numbers become 0-d arrays of their dtype, in the library and on the
    device of the first tensor argument (NumPy when there is none); those used as sizes
    (C indices in host) become NumPy arrays: C reads them from host memory."""
    for i, dt in dtypes.items():
        x = args[i]
        if i in host:
            import numpy
            args[i] = numpy.array(x.item() if hasattr(x, "item") else x, dtype=ARRAY_DTYPE_NAMES[dt])
            continue
        if hasattr(x, "__dlpack__"):
            continue
        if not isinstance(x, (int, float, bool, complex)) and not hasattr(x, "item"):
            raise InvalidArgumentError(f"execute: input {i} is a scalar input of dtype {dt.name}; give a number or "
                                       f"a 0-d array, not a {type(x).__name__}")
        name = ARRAY_DTYPE_NAMES[dt]
        if like is not None and type(like).__module__.startswith("torch"):
            import torch
            args[i] = torch.tensor(x, dtype=getattr(torch, name), device=like.device)
        else:
            import numpy
            args[i] = numpy.array(x, dtype=name)


def export_inputs(fd: "FusionDefinition", args: Sequence[Any], in_arr: Any, keep: List[object]) -> int:
    """Fills in_arr with each C input's DLTensor* (views where a spec needs one); returns
    the DLPack device type of the first tensor input (host when there is none)."""
    device = None
    specs = fd._c_specs
    for i, x in enumerate(args):
        spec: Optional[InputSpec] = specs[i]
        empty = False
        dt = spec.dtype if spec is not None else None
        pairs = _packed.holds_pairs(x, dt)  # bytes of two fp4 elements, by the array's dtype
        if spec is not None:
            if not hasattr(x, "__dlpack__"):
                raise InvalidArgumentError(f"execute: input {spec.index} is a tensor input; give an array (any "
                                           f"DLPack producer), not a {type(x).__name__}")
            if hasattr(x, "shape"):  # else a bare DLPack producer: the C library checks it
                shape = _packed.element_shape(x, dt, pairs)
                empty = check_array(spec, shape) if (spec.view or spec.fixed) else 0 in shape
        index = spec.index if spec is not None else i
        capsule, ptr, dev = _dlpack.export(x, "input", index)
        keep.append(capsule)
        # the DLTensor's own dtype read (ctypes) only where it may hold pairs: a packed input,
        # an array whose dtype says pairs, or a bare DLPack producer (no dtype to ask)
        packed = _packed.as_elements(ptr, dt, f"execute: input {index}", capsule) \
            if pairs or dt in PACKED_DTYPES or not hasattr(x, "dtype") else None
        if packed is not None:  # bytes of two elements (torch's float4_e2m1fn_x2, uint8): counted in elements
            keep.append(packed)
            ptr = packed.address
        if spec is not None and (spec.view or empty):
            v = View(ptr, spec.kept, empty, capsule)
            keep.append(v)
            ptr = v.address
        in_arr[i] = ptr
        if spec is not None and device is None:
            device = dev
    return _capi.KDLCPU if device is None else device


def allocate(fd: "FusionDefinition", fw: _dlpack.Framework, inputs: Sequence[Any], like: Any) -> List[Any]:
    """An array of fw per C output shaped from its extents (read from the user's inputs),
    or None for cfuser to allocate (the library cannot, or the extents do not fit the
    arguments: cfuser reports that)."""
    if fw.empty is None:
        return [None] * len(fd._c_outputs)
    out = []
    inputs = _packed.in_elements(inputs, [v.dtype if kind == "tensor" else None for kind, v in fd._inputs])
    for i, t in enumerate(fd._c_outputs):
        try:
            shape = tuple(extent_value(e, inputs) for e in t.extents)
        except (IndexError, AttributeError, TypeError):
            out.append(None)
            continue
        if t.dtype in PACKED_DTYPES:  # the library's bytes of two elements
            shape = _packed.byte_shape(shape, f"execute: output {i}")
        # empty outputs: cfuser's (the libraries' strides of empty arrays vary)
        out.append(None if any(s <= 0 for s in shape) else fw.empty(shape, t.dtype, like))
    return out


def export_outputs(fd: "FusionDefinition", results: Sequence[Any], out_arr: Any, keep: List[object]) -> None:
    """Fills out_arr with the DLTensor* of each output the library allocated (NULL: cfuser
    allocates), packed ones counted in elements."""
    for i, r in enumerate(results):
        if r is None:
            out_arr[i] = None
            continue
        capsule, out_arr[i], _ = _dlpack.export(r, "output", i)
        keep.append(capsule)
        dt = fd._c_outputs[i].dtype  # arrays allocated here: bytes of pairs only for a packed output
        packed = _packed.as_elements(out_arr[i], dt, f"execute: output {i}", capsule) if dt in PACKED_DTYPES else None
        if packed is not None:
            keep.append(packed)
            out_arr[i] = packed.address


def _view(x: Any, sizes: Sequence[int], index: int) -> Any:
    """x reshaped (a view where its strides allow, as the array library reshapes)."""
    try:
        return x.reshape(tuple(sizes))
    except (ValueError, RuntimeError) as e:
        raise InvalidArgumentError(f"execute: input {index} of shape {tuple(x.shape)} cannot be reshaped to "
                                   f"{tuple(sizes)} as the definition says: {e}") from None


def finish(fd: "FusionDefinition", fw: _dlpack.Framework, inputs: Sequence[Any], results: List[Any]) -> List[Any]:
    """The user's outputs from the C outputs: aliased ones written into their inputs,
    stride orders applied, inputs and repeated outputs in their places."""
    for c, u in fd._aliases.items():
        if fw.copy is None:
            raise UnsupportedError(f"execute: output {c} updates input {u} in place (alias_input), which needs an "
                                   f"array library cfuser can write into (NumPy, PyTorch, CuPy), not {fw.name}")
        fw.copy(inputs[u], results[c])
    out = []
    for entry in fd._outputs:
        kind, ref = entry[0], entry[1]
        if kind == "hidden":
            continue
        if kind == "input":
            out.append(inputs[ref])
            continue
        if kind == "view":
            sizes = entry[2]
            if _packed.holds_pairs(inputs[ref], fd._inputs[ref][1].dtype):  # the bytes of two elements each
                sizes = _packed.byte_shape(sizes, f"execute: the reshape of input {ref}")
            out.append(_view(inputs[ref], sizes, ref))
            continue
        if ref in fd._aliases:
            out.append(inputs[fd._aliases[ref]])
            continue
        r = results[ref]
        order = entry[2]
        if order is not None and fw.layout is not None and fw.copy is not None and len(order) > 1:
            perm = sorted(range(len(order)), key=lambda a: -order[a])  # outermost first
            if fd._c_outputs[ref].dtype in PACKED_DTYPES and perm[-1] != len(order) - 1:
                raise UnsupportedError(f"execute: output {ref} has a packed dtype (two elements of a row per byte) "
                                       f"and stride order {list(order)}, which moves its innermost dimension")
            dst = fw.layout(tuple(int(s) for s in r.shape), r, perm)
            fw.copy(dst, r)
            r = dst
        out.append(r)
    return out
