#!/usr/bin/env bash
# Runs bench/norm (cfuser, the inner persistent heuristic) and bench/norm_torch.py
# (PyTorch eager, torch.compile, device copy) one after the other on the same GPU.
# Usage: bench/run_norm.sh [build-dir] [iterations]
set -euo pipefail
build="${1:-build}"
iters="${2:-50}"
here="$(cd "$(dirname "$0")" && pwd)"
nvidia-smi -L 2>/dev/null || true
"$build/bench_norm" "$iters"
python3 "$here/norm_torch.py" "$iters"
