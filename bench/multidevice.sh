#!/usr/bin/env bash
# bench/multidevice.sh N [OUT]: on a node of N GPUs, cfuser's sharded fusions checked, its
# collectives and fusions timed next to torch.distributed's in the same run, and the
# failure test last. Results in OUT (default $OUT, else bench/results/multidevice):
# cfuser_N.txt, torch_N.txt, table_N.txt (the two side by side). Needs build/ (./cfuser
# build) and torch; about 3-5 minutes.
set -euo pipefail
n="${1:?usage: bench/multidevice.sh N [OUT]}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${2:-${OUT:-$here/bench/results/multidevice}}"
mkdir -p "$out"
bin="$here/build/bench_multidevice"
export MASTER_PORT="${MASTER_PORT:-29611}" CFUSER_NCCL_TIMEOUT_MS="${CFUSER_NCCL_TIMEOUT_MS:-20000}"
torchrun --nproc-per-node="$n" --no-python "$bin" --check --bandwidth --fusions 2>&1 | tee "$out/cfuser_$n.txt"
torchrun --nproc-per-node="$n" "$here/bench/multidevice_torch.py" 2>&1 | tee "$out/torch_$n.txt"
torchrun --nproc-per-node="$n" --no-python "$bin" --failure 2>&1 | tee "$out/failure_$n.txt" || true
python3 - "$out/cfuser_$n.txt" "$out/torch_$n.txt" > "$out/table_$n.txt" <<'PY'
import sys
def table(path):
    rows = {}
    for line in open(path):
        p = line.split()
        if len(p) >= 3 and p[0] in ("allreduce", "allgather", "reduce_scatter"):
            rows[(p[0], p[1])] = float(p[2])
        elif len(p) == 5 and not p[0].startswith("fusion") and p[1].isdigit():
            rows[(p[0], "fusion_us")] = float(p[4])
    return rows
c, t = table(sys.argv[1]), table(sys.argv[2])
print("what size cfuser torch cfuser/torch")
for k in sorted(set(c) & set(t)):
    print(k[0], k[1], c[k], t[k], f"{c[k] / t[k]:.3f}" if t[k] else "-")
PY
cat "$out/table_$n.txt"
grep -c "failure reported" "$out/failure_$n.txt" || true
