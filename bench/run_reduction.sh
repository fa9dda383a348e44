#!/usr/bin/env bash
# Runs bench/reduction (cfuser) and bench/reduction_torch.py (PyTorch eager,
# torch.compile, device copy) one after the other on the same GPU, in one run.
# Usage: bench/run_reduction.sh [build-dir] [iterations]
source "$(dirname "$0")/run_common.sh"
"$build/bench_reduction" "$iters"
python3 "$here/reduction_torch.py" "$iters"
