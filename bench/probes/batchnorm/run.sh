#!/usr/bin/env bash
# bench/probes/batchnorm/run.sh: the hand-written kernels that bound issue 22's batch norm
# (512 x 65536 float, statistics over the rows) on a GPU with nvcc: access-pattern copies
# of its tiling (pat.cu: no statistics, the layout alone; their maxerr is meaningless) and
# the statistics over a cluster of blocks along the rows (cl2.cu, Hopper), the rows read
# again from L2 instead of kept (rr.cu), half of each thread's rows in shared memory
# (hs.cu: the form the outer persistent scheduler's rule 3 generates), each timed with
# queued launches against a device copy of the same bytes (main.inc). Results and what
# they say: bench/results/bn_ceiling_h200_20261129/README.md. cubin.cu times a kernel cfuser
# compiled (CUBIN=<file>; bench/results/bn_nvrtc_h200_20261129/README.md), not run here.
# Usage: bench/probes/batchnorm/run.sh [out-dir]   (PER_ITER=1: define and run's timing, an event
# between every two launches and their median, instead of one pair around all of them)
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
build rr_8_32_0 rr.cu "-DTX=8 -DTY=32 -DKEEP=0 -DMINB=3" &      # rows read again from L2, none kept
build rr_8_16_16 rr.cu "-DTX=8 -DTY=16 -DKEEP=16 -DMINB=3" &    # half of them read again
build hs_16_16_16 hs.cu "-DTX=16 -DTY=16 -DKEEP=16 -DMINB=2" &  # 256-byte rows, half in shared memory
build hs_8_16_16 hs.cu "-DTX=8 -DTY=16 -DKEEP=16 -DMINB=4" &    # 128-byte rows, half in shared memory
wait
for p in p_8_16_32 p_16_8_32 p_32_4_32 p_8_16_8 cl_16_8_2 cl_32_4_4 rr_8_32_0 rr_8_16_16 hs_16_16_16 hs_8_16_16; do
  (cd "$out" && "./$p" 200)
done
