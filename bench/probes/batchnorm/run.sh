#!/usr/bin/env bash
# bench/probes/batchnorm/run.sh: the hand-written kernels that bound issue 22's batch norm
# (512 x 65536 float, statistics over the rows) on a GPU with nvcc: access-pattern copies
# of its tiling (pat.cu: no statistics, the layout alone; their maxerr is meaningless) and
# the statistics over a cluster of blocks along the rows (cl2.cu, Hopper), each timed with
# queued launches against a device copy of the same bytes (main.inc). Results and what
# they say: bench/results/bn_ceiling_h200_20261129/README.md.
# Usage: bench/probes/batchnorm/run.sh [out-dir]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$(mktemp -d)}"
mkdir -p "$out"
build() { nvcc -O3 -arch=sm_90a -o "$out/$1" "$here/$2" $3 -Xptxas -v 2> "$out/$1.ptxas"; }
build p_8_16_32 pat.cu "-DTXP=8 -DTYP=16 -DRPT=32" &   # cfuser's tiling: 128-byte row segments
build p_16_8_32 pat.cu "-DTXP=16 -DTYP=8 -DRPT=32" &   # 256-byte segments, half the rows a block
build p_32_4_32 pat.cu "-DTXP=32 -DTYP=4 -DRPT=32" &   # 512-byte segments, a quarter of the rows
build p_8_16_8 pat.cu "-DTXP=8 -DTYP=16 -DRPT=8" &     # 128-byte segments, a quarter of the rows
build cl_16_8_2 cl2.cu "-DTXC=16 -DTYC=8 -DCL=2 -DMINB=3" &  # clusters of 2 blocks along the rows
build cl_32_4_4 cl2.cu "-DTXC=32 -DTYC=4 -DCL=4 -DMINB=3" &  # clusters of 4
wait
for p in p_8_16_32 p_16_8_32 p_32_4_32 p_8_16_8 cl_16_8_2 cl_32_4_4; do
  (cd "$out" && "./$p" 200)
done
