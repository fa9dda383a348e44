"""tools/bench_json.py: bench output (`<label> <what> time_us=<us> GB/s=<GB/s>` lines, the
GPU named first) becomes JSON lines with each result's fraction of the device copy's GB/s
for the same work, and a well-formed SVG plot with a bar per result and the copy's line."""
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools", "bench_json.py")
OUTPUT = """GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-x)
cfuser row_sum N=16384 time_us=400.0 GB/s=2684
torch eager row_sum N=16384 time_us=500.0 GB/s=2147
device copy row_sum N=16384 time_us=700.0 GB/s=3067
"""


def test_bench_output_becomes_json_lines_and_a_plot(tmp_path):
    svg = tmp_path / "plot.svg"
    r = subprocess.run([sys.executable, TOOL, "--bench", "reduction", "--plot", str(svg)], input=OUTPUT,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert rows[0] == {"bench": "reduction", "label": "cfuser", "work": "row_sum N=16384", "time_us": 400.0,
                       "gbps": 2684.0, "copy_gbps": 3067.0, "fraction_of_copy": 0.875,
                       "device": "NVIDIA H100 80GB HBM3"}
    assert [r["label"] for r in rows] == ["cfuser", "torch eager", "device copy"]
    root = ET.parse(svg).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    bars = [t.text for t in root.iter(ns + "title") if t.text and "GB/s" in t.text]
    assert "cfuser: 2684 GB/s" in bars and "torch eager: 2147 GB/s" in bars and "device copy: 3067 GB/s" in bars
