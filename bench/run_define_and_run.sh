#!/usr/bin/env bash
# Runs bench/define_and_run (cfuser's define and run, constant and symbolic sizes) and
# bench/define_and_run_torch.py (PyTorch eager, torch.compile, device copy) one after the
# other on the same GPU, then prints one table of both.
# Usage: bench/run_define_and_run.sh [build-dir] [iterations] [--mean]
set -uo pipefail
build="${1:-build}"
iters="${2:-50}"
mean="${3:-}"
here="$(cd "$(dirname "$0")" && pwd)"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
nvidia-smi -L 2>/dev/null || true
status=0
"$build/bench_define_and_run" "$iters" $mean | tee "$out/cfuser.txt" || status=1
python3 "$here/define_and_run_torch.py" "$iters" $mean | tee "$out/torch.txt" || status=1
echo
python3 "$here/define_and_run_torch.py" --table "$out/cfuser.txt" "$out/torch.txt" || status=1
exit $status
