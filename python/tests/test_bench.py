"""The non-GPU parts of bench/python_fusions.py: it runs end to end on the host backend
with NumPy, checks every contender's result, and prints its lines in the documented form."""
import os
import re
import sys

import pytest

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "bench")
sys.path.insert(0, BENCH)
import python_fusions  # noqa: E402


def test_sizes_parse():
    assert python_fusions.parse_sizes("2**20,4096") == [1 << 20, 4096]


def test_bench_runs_on_the_host_backend(capsys):
    assert python_fusions.main(["--library", "numpy", "--sizes", "2048", "--iters", "2",
                                "--overhead-iters", "20"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("cfuser 0.1.0 (")
    timed = [l for l in lines[1:-1]]
    assert len(timed) == 8  # 4 fusions x (cfuser, numpy), one size
    for line in timed:
        assert re.fullmatch(r"(relu_mul_add|bias_gelu) N=2048 (cfuser|numpy) time_us=[0-9.]+ GB/s=[0-9]+|"
                            r"(softmax|layer_norm) N=4096 (cfuser|numpy) time_us=[0-9.]+ GB/s=[0-9]+", line), line
    assert re.fullmatch(r"overhead: execute_us=[0-9.]+ c_run_us=[0-9.]+ python_overhead_us=-?[0-9.]+ "
                        r"python_side_us=[0-9.]+ \(target < 20 us\)", lines[-1]), lines[-1]


def test_a_wrong_result_is_reported_and_fails_the_run(capsys, monkeypatch):
    fusion = python_fusions.FUSIONS["relu_mul_add"]
    monkeypatch.setattr(fusion, "math", lambda xp, t: xp.relu(t[0] * t[1]))  # not what cfuser computes
    assert python_fusions.main(["--library", "numpy", "--sizes", "1024", "--iters", "1", "--overhead-iters", "5",
                                "--fusions", "relu_mul_add"]) == 1
    out = capsys.readouterr().out
    assert "relu_mul_add N=1024 cfuser failed: RuntimeError: wrong result: max |diff|" in out


def test_torch_without_cuda_says_so():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    with pytest.raises(SystemExit) as info:
        python_fusions.main(["--library", "torch"])
    assert "torch sees no CUDA device" in str(info.value)
