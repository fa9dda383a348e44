#!/usr/bin/env bash
# Runs bench/matmul (cf_matmul / cf_linear through define and run, the matmul row) and
# bench/matmul_torch.py (cuBLAS via torch.matmul; linear + bias + gelu eager and under
# torch.compile) one after the other on the same GPU. The lines pair by name and shape.
# Usage: bench/run_matmul.sh [build-dir] [iterations]
source "$(dirname "$0")/run_common.sh"
"$build/bench_matmul" "$iters"
python3 "$here/matmul_torch.py" "$iters"
