#!/usr/bin/env bash
# Runs bench/reduction_sweep (cfuser's define and run on row and column sums and maxima of
# 46 shapes in float32, bfloat16 and float16) and bench/reduction_sweep_torch.py (torch
# eager and torch.compile on the same cases, the device copy) one after the other on the
# same GPU, keeps both outputs in OUT-DIR, then prints the Markdown table of every output
# kept there (so a sweep split into several runs, e.g. one per dtype, ends in one table).
# Usage: bench/run_reduction_sweep.sh [build-dir] [iterations] [OUT-DIR] [bench options...]
#   bench options: --dtypes float32,bfloat16,float16 --kinds row_sum,col_sum,row_max,col_max
#   --mean; TORCH_SWEEP_FLAGS=--dynamic compiles once per kind and dtype (faster).
source "$(dirname "$0")/run_common.sh"
set +e # a failed half still leaves the other and the table
out="${3:-reduction_sweep_out}"
shift $(( $# < 3 ? $# : 3 ))
mkdir -p "$out"
tag="$(echo "$*" | tr -c 'a-z0-9_' '_' | sed 's/_*$//')"
status=0
"$build/bench_reduction_sweep" "$iters" "$@" | tee "$out/cfuser${tag:+_$tag}.txt" || status=1
mean=""
case " $* " in *" --mean "*) mean="--mean" ;; esac
python3 "$here/reduction_sweep_torch.py" "$out/cfuser${tag:+_$tag}.txt" "$iters" $mean ${TORCH_SWEEP_FLAGS:-} |
  tee "$out/torch${tag:+_$tag}.txt" || status=1
echo
python3 "$here/reduction_sweep_torch.py" --table "$out"/cfuser*.txt "$out"/torch*.txt || status=1
exit $status
