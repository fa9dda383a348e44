"""PyTorch's figures for bench/define_and_run.c's work: the reference fusions of issue 11,
eager and torch.compile, plus the device's copy bandwidth (a clone), each the median (or,
with --mean, the mean) of CUDA-event times after warm-ups. Prints lines in the form of
bench/define_and_run.c:
    torch eager <name> <shape> time_us=<t> GB/s=<g>
    torch.compile <name> <shape> time_us=<t> GB/s=<g>
    device copy (clone) <numel> time_us=<t> GB/s=<g>
GB/s counts every input read once and every output written once (the copy: read and
written). torch.compile's result is checked against eager's first.
    python3 bench/define_and_run_torch.py [iterations] [--mean]
    python3 bench/define_and_run_torch.py --table CFUSER_OUT TORCH_OUT   # no torch needed
The second form reads both programs' output and prints one Markdown table (what
bench/run_define_and_run.sh shows)."""
import argparse
import re
import sys

import torch_common

ROWS, COLS, SQ, TR, PW = 16384, 4096, 16384, 8192, 1 << 28
BN_ROWS, BN_COLS = 512, 65536


def cases(torch):
    F = torch.nn.functional
    f32, bf16 = torch.float32, torch.bfloat16

    def rand(*shape, dtype=f32):
        return (torch.rand(*shape, device="cuda") * 2 - 1).to(dtype)

    def rmsnorm(x, w):
        if hasattr(F, "rms_norm"):
            return F.rms_norm(x, (x.shape[-1],), w, 1e-6)
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w

    def layernorm(x, w, b):
        return F.layer_norm(x, (x.shape[-1],), w, b, 1e-5)

    return (  # name, function, shape for the table, argument maker
        ("row_sum", lambda x: x.sum(1), f"{SQ}x{SQ}", lambda: (rand(SQ, SQ),)),
        ("col_sum", lambda x: x.sum(0), f"{SQ}x{SQ}", lambda: (rand(SQ, SQ),)),
        ("softmax_f32", lambda x: torch.softmax(x, 1), f"{ROWS}x{COLS}", lambda: (rand(ROWS, COLS),)),
        ("softmax_bf16", lambda x: torch.softmax(x, 1), f"{ROWS}x{COLS}", lambda: (rand(ROWS, COLS, dtype=bf16),)),
        ("layernorm_f32", layernorm, f"{ROWS}x{COLS}", lambda: (rand(ROWS, COLS), rand(COLS), rand(COLS))),
        ("layernorm_bf16", layernorm, f"{ROWS}x{COLS}",
         lambda: (rand(ROWS, COLS, dtype=bf16), rand(COLS, dtype=bf16), rand(COLS, dtype=bf16))),
        ("rmsnorm_f32", rmsnorm, f"{ROWS}x{COLS}", lambda: (rand(ROWS, COLS), rand(COLS))),
        ("transpose", lambda x: x.t().contiguous(), f"{TR}x{TR}", lambda: (rand(TR, TR),)),
        ("relu_mul_add", lambda a, b, c: torch.relu(a * b + c), f"{PW}", lambda: (rand(PW), rand(PW), rand(PW))),
        ("bias_gelu", lambda x, b: F.gelu(x + b), f"{ROWS}x{COLS}", lambda: (rand(ROWS, COLS), rand(COLS))),
        ("copy", lambda x: x.clone(), f"{PW}", lambda: (rand(PW),)),
        ("batchnorm", lambda x, w, b: F.batch_norm(x, None, None, w, b, True, 0.1, 1e-5), f"{BN_ROWS}x{BN_COLS}",
         lambda: (rand(BN_ROWS, BN_COLS), rand(BN_COLS), rand(BN_COLS))),
    )


def run(iters, mean):
    import torch

    if not torch.cuda.is_available():
        sys.exit("torch sees no CUDA device")
    stat = (lambda fn: sum(torch_common.event_times_us(fn, iters)) / iters) if mean else (
        lambda fn: torch_common.median_us(fn, iters))
    failures = 0
    for name, fn, shape, make in cases(torch):
        args = make()
        for label, f in torch_common.eager_and_compiled(fn):
            failures += torch_common.time_one(label, f"{name} {shape}", f, args, fn, stat)
        del args
        torch.cuda.empty_cache()
    torch_common.print_copy(stat, PW)
    return 1 if failures else 0


# ---- the table ------------------------------------------------------------------------------

LINE = re.compile(r"^(cfuser constant|cfuser symbolic|torch eager|torch\.compile) (\S+) (\S+) (.*)$")
TIMED = re.compile(r"^time_us=([0-9.]+) GB/s=([0-9]+)")
COLUMNS = ("cfuser constant", "cfuser symbolic", "torch eager", "torch.compile")


def read_results(paths):
    """{(name, shape): {column: (us, gbps) or message}}, the copies {which: (us, gbps)}, the
    symbolic/constant ratios and each case's copy of its own bytes {(name, shape): gbps}."""
    rows, copies, ratios, same = {}, {}, {}, {}
    for line in torch_common.result_lines(paths):
        m = torch_common.COPY.match(line)
        if m:
            copies[m.group(1)] = (float(m.group(3)), float(m.group(4)))
            continue
        c = re.match(r"^copy of its bytes (\S+) (\S+) time_us=([0-9.]+) GB/s=([0-9]+)", line)
        if c:
            same[(c.group(1), c.group(2))] = float(c.group(4))
            continue
        r = re.match(r"^cfuser symbolic/constant (\S+) (\S+) ratio=([0-9.]+)", line)
        if r:
            ratios[(r.group(1), r.group(2))] = float(r.group(3))
            continue
        m = LINE.match(line)
        if m:
            t = TIMED.match(m.group(4))
            cell = (float(t.group(1)), float(t.group(2))) if t else m.group(4)
            rows.setdefault((m.group(2), m.group(3)), {})[m.group(1)] = cell
    return rows, copies, ratios, same


def cell(v):
    if v is None:
        return ""
    if isinstance(v, tuple):
        return f"{v[0]:.1f} us ({v[1]:.0f} GB/s)"
    return v.replace("|", "/")[:120]


def table(paths):
    rows, copies, ratios, same = read_results(paths)
    ref = copies.get("cuMemcpyDtoD") or copies.get("host") or copies.get("clone")
    print("| fusion | shape | cfuser const | cfuser symbolic | sym/const | torch eager | torch.compile | % of copy | % of a copy of its bytes |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for (name, shape), cols in rows.items():
        const = cols.get("cfuser constant")
        pct = f"{100 * const[1] / ref[1]:.0f}%" if isinstance(const, tuple) and ref and ref[1] else ""
        ratio = ratios.get((name, shape))
        own = same.get((name, shape))
        own_pct = f"{100 * const[1] / own:.0f}%" if isinstance(const, tuple) and own else ""
        print(f"| {name} | {shape} | " + " | ".join(cell(cols.get(c)) for c in COLUMNS[:2]) +
              f" | {'' if ratio is None else f'{ratio:.3f}'} | " +
              " | ".join(cell(cols.get(c)) for c in COLUMNS[2:]) + f" | {pct} | {own_pct} |")
    for which, v in copies.items():
        print(f"| device copy ({which}) | | {cell(v)} | | | | | {100 * v[1] / ref[1]:.0f}% | |")
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("iters", nargs="?", type=int, default=50)
    p.add_argument("--mean", action="store_true", help="the mean of the timed runs, not the median")
    p.add_argument("--table", nargs="+", metavar="OUTPUT", help="print the table of these outputs and exit")
    a = p.parse_args(argv)
    return table(a.table) if a.table else run(a.iters, a.mean)


if __name__ == "__main__":
    sys.exit(main())
