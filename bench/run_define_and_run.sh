#!/usr/bin/env bash
# Runs bench/define_and_run (cfuser's define and run, constant and symbolic sizes) and
# bench/define_and_run_torch.py (PyTorch eager, torch.compile, device copy) one after the
# other on the same GPU, then prints one table of both.
# Usage: bench/run_define_and_run.sh [build-dir] [iterations] [--mean]
source "$(dirname "$0")/run_common.sh"
set +e # a failed half still leaves the other and the table
mean="${3:-}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
status=0
"$build/bench_define_and_run" "$iters" $mean | tee "$out/cfuser.txt" || status=1
python3 "$here/define_and_run_torch.py" "$iters" $mean | tee "$out/torch.txt" || status=1
echo
python3 "$here/define_and_run_torch.py" --table "$out/cfuser.txt" "$out/torch.txt" || status=1
exit $status
