"""Pictures and reproducers of a FusionDefinition: ``fd.show()`` and ``fd.repro()``.

``fd.show()`` draws the definition's dataflow (tensors and ops) with the C library's
picture API (``cf_fusion_draw_dataflow``); ``fd.show("segments")`` the segments of its last
define-and-run execute (``cf_fusion_cache_draw_segments``). The result renders itself in
Jupyter (``_repr_svg_``) and keeps the text (``.text``, SVG or Graphviz DOT with
``format="dot"``). ``fd.repro()`` writes the C reproducer of ``cf_fusion_write_repro``: a
standalone program that rebuilds the definition and its last execute's input shapes and
dtypes and runs it as execute did, for a bug report.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from . import _capi
from .types import InvalidArgumentError

_FORMATS = {"dot": 0, "svg": 1}


class Picture:
    """A drawing: ``.text`` is the SVG or DOT; Jupyter shows an SVG one as a picture."""

    def __init__(self, text: str, format: str) -> None:
        self.text, self.format = text, format

    def _repr_svg_(self) -> Optional[str]:
        return self.text if self.format == "svg" else None

    def save(self, path: str) -> None:
        with open(path, "w") as f:
            f.write(self.text)

    def __str__(self) -> str:
        return self.text


def show(fd: Any, what: str = "dataflow", format: str = "svg") -> Picture:
    if format not in _FORMATS:
        raise InvalidArgumentError(f"show: format must be 'svg' or 'dot', not {format!r}")
    if what == "dataflow":
        status, text = _capi.print_to_string(_capi.lib.cf_fusion_draw_dataflow, fd._f, _FORMATS[format])
        fd._check(status)
        return Picture(text, format)
    if what != "segments":
        raise InvalidArgumentError(f"show: what must be 'dataflow' or 'segments', not {what!r}")
    r = fd._last
    if r is None or not r.cached:
        raise InvalidArgumentError("show('segments'): the last execute did not run by define and run (it has not "
                                   "run, or the definition is scheduled by hand)")
    status, text = _capi.print_to_string(_capi.lib.cf_fusion_cache_draw_segments, r.handle, _FORMATS[format])
    if status:
        raise InvalidArgumentError(f"show('segments'): {r.error()}")
    return Picture(text, format)


def repro(fd: Any, inputs: Optional[Sequence[Any]] = None, path: Optional[str] = None) -> str:
    """The C reproducer's text (also written to ``path`` when given). ``inputs``: arrays
    whose shapes and dtypes the program uses (default: the definition's constant extents,
    8 for each symbolic one)."""
    from . import _dlpack

    exported = [_dlpack.export(x, "input", i) for i, x in enumerate(inputs or [])]
    ptrs = _dlpack.pointer_array([e[1] for e in exported]) if exported else None  # a DLManagedTensor starts with its DLTensor
    status, text = _capi.print_to_string(_capi.lib.cf_fusion_write_repro, fd._f, len(exported), ptrs,
                                         not fd._user_scheduled, _capi.BACKEND_HOST)
    del exported  # the capsules, kept alive until here
    fd._check(status)
    if path:
        with open(path, "w") as f:
            f.write(text)
    return text
