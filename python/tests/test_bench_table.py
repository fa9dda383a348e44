"""bench/define_and_run_torch.py --table: the one table of run_define_and_run.sh, made from
bench_define_and_run's lines and the torch script's (no torch or GPU needed)."""
import os
import sys

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "bench")
sys.path.insert(0, BENCH)
import define_and_run_torch  # noqa: E402

CFUSER = """# define and run, CUDA events, median of 50 runs
cfuser constant row_sum 16384x16384 time_us=350.0 GB/s=3068 segments=1 schedulers=reduction
cfuser symbolic row_sum 16384x16384 time_us=352.0 GB/s=3050 segments=1 schedulers=reduction
copy of its bytes row_sum 16384x16384 time_us=300.0 GB/s=3579
cfuser symbolic/constant row_sum 16384x16384 ratio=1.006
cfuser constant odd 4x4 refused: execute: no scheduler accepts segment 1 of 2 (computing T2): reduction: no
cfuser symbolic odd 4x4 refused: execute: no scheduler accepts segment 1 of 2 (computing T2): reduction: no
device copy (cuMemcpyDtoD) 268435456 time_us=700.0 GB/s=3068
"""
TORCH = """torch eager row_sum 16384x16384 time_us=360.0 GB/s=2983
torch.compile row_sum 16384x16384 failed: RuntimeError: boom
device copy (clone) 268435456 time_us=720.0 GB/s=2983
"""


def test_table_rows(tmp_path, capsys):
    c, t = tmp_path / "c.txt", tmp_path / "t.txt"
    c.write_text(CFUSER)
    t.write_text(TORCH)
    assert define_and_run_torch.main(["--table", str(c), str(t)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| fusion | shape | cfuser const | cfuser symbolic | sym/const |")
    assert lines[2] == ("| row_sum | 16384x16384 | 350.0 us (3068 GB/s) | 352.0 us (3050 GB/s) | 1.006 | "
                        "360.0 us (2983 GB/s) | failed: RuntimeError: boom | 100% | 86% |")
    assert lines[3].startswith("| odd | 4x4 | refused: execute: no scheduler accepts segment 1 of 2")
    assert lines[4] == "| device copy (cuMemcpyDtoD) | | 700.0 us (3068 GB/s) | | | | | 100% | |"
    assert lines[5] == "| device copy (clone) | | 720.0 us (2983 GB/s) | | | | | 97% | |"
