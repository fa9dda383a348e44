"""fd.show() and fd.repro(): the dataflow picture (SVG that Jupyter renders through
_repr_svg_, or DOT), the segments of the last define-and-run execute, and the C reproducer
of a definition with the shapes of given inputs."""
import numpy as np
import pytest

from cfuser import DataType, FusionDefinition, InvalidArgumentError


def definition():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.relu(fd.ops.mul(a, a)))
    return fd


def test_show_draws_the_dataflow_as_svg_and_dot():
    fd = definition()
    pic = fd.show()
    assert pic._repr_svg_().startswith("<svg") or pic._repr_svg_().startswith("<?xml")
    assert ">mul<" in pic.text and ">relu<" in pic.text
    dot = fd.show(format="dot")
    assert dot._repr_svg_() is None
    assert dot.text.startswith("digraph dataflow {")
    with pytest.raises(InvalidArgumentError, match="format must be 'svg' or 'dot'"):
        fd.show(format="png")


def test_show_segments_after_an_execute():
    fd = definition()
    with pytest.raises(InvalidArgumentError, match="did not run by define and run"):
        fd.show("segments")
    fd.execute([np.ones((4, 8), np.float32)])
    text = fd.show("segments", format="dot").text
    assert 'label="segment 0: pointwise; reads input 0; writes output 0";' in text


def test_repro_writes_a_c_program_of_the_inputs_shapes(tmp_path):
    fd = definition()
    path = tmp_path / "repro.c"
    text = fd.repro([np.ones((3, 5), np.float32)], path=str(path))
    assert path.read_text() == text
    assert "cf_tensor_symbolic(f, CF_FLOAT, 2)" in text
    assert "cf_tensor_host(CF_FLOAT, 2, (int64_t[]){3, 5})" in text
    assert "cf_fusion_execute(" in text
