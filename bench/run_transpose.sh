#!/usr/bin/env bash
# Runs bench/transpose (cfuser's transpose heuristic) and bench/transpose_torch.py
# (PyTorch eager, torch.compile, device copy) one after the other on the same GPU.
# Usage: bench/run_transpose.sh [build-dir] [iterations]
set -euo pipefail
build="${1:-build}"
iters="${2:-50}"
here="$(cd "$(dirname "$0")" && pwd)"
nvidia-smi -L 2>/dev/null || true
"$build/bench_transpose" "$iters"
python3 "$here/transpose_torch.py" "$iters"
