#!/usr/bin/env bash
# Runs bench/pointwise (cfuser) and bench/pointwise_torch.py (PyTorch eager,
# torch.compile, device copy) one after the other on the same GPU, in one run.
# Usage: bench/run_pointwise.sh [build-dir] [iterations]
source "$(dirname "$0")/run_common.sh"
"$build/bench_pointwise" "$iters"
python3 "$here/pointwise_torch.py" "$iters"
