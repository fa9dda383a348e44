#!/usr/bin/env bash
# Runs bench/reduction (cfuser) and bench/reduction_torch.py (PyTorch eager,
# torch.compile, device copy) one after the other on the same GPU, in one run.
# Usage: bench/run_reduction.sh [build-dir] [iterations]
set -euo pipefail
build="${1:-build}"
iters="${2:-50}"
here="$(cd "$(dirname "$0")" && pwd)"
nvidia-smi -L 2>/dev/null || true
"$build/bench_reduction" "$iters"
python3 "$here/reduction_torch.py" "$iters"
