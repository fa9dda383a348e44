#!/usr/bin/env bash
# Runs bench/norm (cfuser, the inner persistent heuristic) and bench/norm_torch.py
# (PyTorch eager, torch.compile, device copy) one after the other on the same GPU.
# Usage: bench/run_norm.sh [build-dir] [iterations]
source "$(dirname "$0")/run_common.sh"
"$build/bench_norm" "$iters"
python3 "$here/norm_torch.py" "$iters"
