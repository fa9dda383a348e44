#!/usr/bin/env bash
# Runs bench/launch (cfuser) and bench/launch_torch.py (PyTorch eager, CUDA graph replay)
# one after the other on the same GPU, in one run. Usage: bench/run_launch.sh [build-dir]
source "$(dirname "$0")/run_common.sh"
"$build/bench_launch"
python3 "$here/launch_torch.py"
