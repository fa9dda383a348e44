#!/usr/bin/env bash
# Runs bench/transpose (cfuser's transpose heuristic) and bench/transpose_torch.py
# (PyTorch eager, torch.compile, device copy) one after the other on the same GPU.
# Usage: bench/run_transpose.sh [build-dir] [iterations]
source "$(dirname "$0")/run_common.sh"
"$build/bench_transpose" "$iters"
python3 "$here/transpose_torch.py" "$iters"
