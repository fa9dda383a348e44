# Sourced by bench/run_*.sh with their arguments: `[build-dir] [iterations]`. Sets build
# (default build), iters (default 50) and here (bench/), stops on the first failure, and
# names the GPU first, so that the figures of a run say where they came from.
set -euo pipefail
build="${1:-build}"
iters="${2:-50}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
nvidia-smi -L 2>/dev/null || true
