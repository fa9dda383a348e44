#!/usr/bin/env bash
# Runs bench/launch (cfuser) and bench/launch_torch.py (PyTorch eager, CUDA graph replay)
# one after the other on the same GPU, in one run. Usage: bench/run_launch.sh [build-dir]
set -euo pipefail
build="${1:-build}"
here="$(cd "$(dirname "$0")" && pwd)"
nvidia-smi -L 2>/dev/null || true
"$build/bench_launch"
python3 "$here/launch_torch.py"
