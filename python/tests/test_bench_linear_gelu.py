"""bench/linear_gelu.py's arguments without a GPU or torch: the default shapes (issue 24's
LLM shapes and squares), --shapes, --dtypes, --queued, --no-gelu and --bound, and a one-line error
for a bad shape or dtype (the measurement itself needs torch with CUDA)."""
import os
import sys

import pytest

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "bench")
sys.path.insert(0, BENCH)
import linear_gelu  # noqa: E402


def test_the_default_shapes_are_the_llm_weights_and_the_squares():
    a = linear_gelu.parse([])
    assert len(a.shapes) == 15
    assert (16, 4096, 11008) in a.shapes and (8192, 11008, 4096) in a.shapes and (8192, 8192, 8192) in a.shapes
    assert a.dtypes == ["bf16", "f16"] and a.iters == 20 and a.rounds == 3
    assert a.gelu and not a.queued and not a.bound


def test_chosen_shapes_dtypes_and_modes():
    a = linear_gelu.parse(["5", "--shapes", "7x4096x11008,128x64x256", "--dtypes", "f16", "--queued", "--no-gelu",
                           "--rounds", "2", "--bound"])
    assert a.shapes == [(7, 4096, 11008), (128, 64, 256)]
    assert a.dtypes == ["f16"] and a.iters == 5 and a.rounds == 2
    assert a.queued and not a.gelu and a.bound


@pytest.mark.parametrize("argv, says", [(["--shapes", "8x8"], "--shapes: expected MxKxN"),
                                        (["--shapes", "8x0x8"], "--shapes: expected MxKxN"),
                                        (["--shapes", "axbxc"], "--shapes: expected MxKxN"),
                                        (["--dtypes", "f32"], "--dtypes: expected some of bf16, f16")])
def test_a_bad_argument_is_one_line(argv, says, capsys):
    with pytest.raises(SystemExit) as e:
        linear_gelu.parse(argv)
    assert e.value.code == 2
    assert says in capsys.readouterr().err
