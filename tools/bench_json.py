#!/usr/bin/env python3
"""Bench results as JSON lines, and a plot of achieved GB/s against the device's copy.

Every bench (bench/*.c and bench/*_torch.py) prints one line per measurement,
`<label> <what> time_us=<us> GB/s=<GB/s>` (bench/torch_common.py's timed_line), the
device-copy reference among them (a label with "copy" in it); run_*.sh prints the GPU's
name first (`GPU 0: NVIDIA H100 ...`). This reads that output and writes one JSON object a
line: {"bench", "label", "work", "time_us", "gbps", "copy_gbps", "fraction_of_copy",
"device"}, where work is <what> and copy_gbps the copy's GB/s for the same work. With
--plot, an SVG bar chart (no matplotlib needed): per work, one bar per label, the copy's
bandwidth as a dashed line.

    bench/run_pointwise.sh build 50 | tools/bench_json.py --bench pointwise --out r.jsonl --plot r.svg
    tools/bench_json.py --plot r.svg r.jsonl ...     (plot JSON lines written before)
"""
import argparse
import json
import re
import sys
from xml.sax.saxutils import escape

LINE = re.compile(r"^(?P<head>.+?) time_us=(?P<us>[0-9.]+) GB/s=(?P<gbps>[0-9.]+)\s*$")
GPU = re.compile(r"^GPU \d+: (?P<name>[^(]+?)\s*(\(|$)")


def split_head(head):
    """('cfuser (schedule_pointwise)', 'pointwise N=1') from the text before time_us."""
    words = head.split(" ")
    for i, w in enumerate(words):  # the work starts at the word before the first key=value
        if "=" in w and i > 0:
            return " ".join(words[:i - 1]), " ".join(words[i - 1:])
    return " ".join(words[:-1]), words[-1]


def parse(text, bench):
    device, rows = None, []
    for line in text.splitlines():
        g = GPU.match(line)
        if g:
            device = g.group("name")
        m = LINE.match(line)
        if not m:
            continue
        label, work = split_head(m.group("head"))
        rows.append({"bench": bench, "label": label, "work": work, "time_us": float(m.group("us")),
                     "gbps": float(m.group("gbps")), "device": device})
    for r in rows:
        copy = [c["gbps"] for c in rows if "copy" in c["label"] and c["work"] == r["work"]]
        r["copy_gbps"] = copy[0] if copy else None
        r["fraction_of_copy"] = round(r["gbps"] / copy[0], 3) if copy and copy[0] else None
    return rows


def plot(rows):
    works = list(dict.fromkeys(r["work"] for r in rows))
    labels = list(dict.fromkeys(r["label"] for r in rows if "copy" not in r["label"]))
    top = max([r["gbps"] for r in rows] + [r["copy_gbps"] or 0 for r in rows] + [1]) * 1.1
    bar, gap, left, height = 22, 28, 70, 260
    group = bar * max(len(labels), 1) + gap
    width = left + group * max(len(works), 1) + 20 + 260
    colors = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height + 150}" font-family="monospace" '
           'font-size="11">', f'<title>achieved GB/s against the device copy ({escape(rows[0]["device"] or "device")})'
           '</title>' if rows else "<title>no results</title>"]
    y = lambda v: 20 + height - v / top * height  # noqa: E731
    out.append(f'<line x1="{left}" y1="{y(0)}" x2="{left + group * len(works)}" y2="{y(0)}" stroke="#333"/>')
    for k in range(5):
        v = top * k / 4
        out.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.0f}</text>')
    out.append(f'<text x="10" y="14">GB/s</text>')
    for i, w in enumerate(works):
        x0 = left + i * group + gap / 2
        for j, lab in enumerate(labels):
            r = next((r for r in rows if r["work"] == w and r["label"] == lab), None)
            if r:
                out.append(f'<rect x="{x0 + j * bar:.1f}" y="{y(r["gbps"]):.1f}" width="{bar - 2}" '
                           f'height="{y(0) - y(r["gbps"]):.1f}" fill="{colors[j % len(colors)]}">'
                           f'<title>{escape(lab)}: {r["gbps"]:.0f} GB/s</title></rect>')
        copy = next((r["copy_gbps"] for r in rows if r["work"] == w and r["copy_gbps"]), None)
        if copy:
            out.append(f'<line x1="{x0 - 4:.1f}" y1="{y(copy):.1f}" x2="{x0 + bar * len(labels) + 4:.1f}" '
                       f'y2="{y(copy):.1f}" stroke="#000" stroke-dasharray="4 3"><title>device copy: {copy:.0f} GB/s'
                       '</title></line>')
        out.append(f'<text x="{x0:.1f}" y="{y(0) + 14:.1f}" transform="rotate(20 {x0:.1f} {y(0) + 14:.1f})">'
                   f'{escape(w)}</text>')
    lx = left + group * len(works) + 20
    for j, lab in enumerate(labels + ["device copy"]):
        ly = 30 + 18 * j
        if lab == "device copy":
            out.append(f'<line x1="{lx}" y1="{ly - 4}" x2="{lx + 14}" y2="{ly - 4}" stroke="#000" stroke-dasharray="4 3"/>')
        else:
            out.append(f'<rect x="{lx}" y="{ly - 10}" width="14" height="12" fill="{colors[j % len(colors)]}"/>')
        out.append(f'<text x="{lx + 20}" y="{ly}">{escape(lab)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("inputs", nargs="*", help="JSON-lines files to plot (default: bench output on stdin)")
    ap.add_argument("--bench", default="bench", help="the bench's name, recorded in each line")
    ap.add_argument("--out", help="append the JSON lines here (default: standard output)")
    ap.add_argument("--plot", help="write the SVG plot here")
    args = ap.parse_args()
    if args.inputs:
        rows = [json.loads(l) for p in args.inputs for l in open(p) if l.strip()]
    else:
        rows = parse(sys.stdin.read(), args.bench)
        text = "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows)
        if args.out:
            open(args.out, "a").write(text)
        else:
            sys.stdout.write(text)
    if args.plot:
        open(args.plot, "w").write(plot(rows))
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
