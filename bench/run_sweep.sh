#!/usr/bin/env bash
# Runs bench/sweep.py, issue 22's sweep (every fusion kind x its shapes x float32, bfloat16
# and float16 by define and run, next to torch eager and torch.compile), with the library
# of a build directory; its raw lines are appended to OUT-DIR, then the Markdown table of
# every run kept in OUT-DIR is printed (and kept as OUT-DIR/table.md, its plot beside it), so a sweep split over
# several calls (by --kinds, or stopped by --budget-s and continued with --resume) ends in
# one table. With --check it runs the host check instead (NumPy, tiny shapes, no GPU and no
# torch): the ctest bench_sweep_check.
# Usage: bench/run_sweep.sh [build-dir] [iterations] [OUT-DIR] [sweep options...]
#   sweep options: --kinds a,b --dtypes float32,bfloat16,float16 --max-cases N --shapes AxB,...
#   --budget-s S
#   --resume --static --max-elems N --check (python3 bench/sweep.py --help)
# The interpreter: $CFUSER_PYTHON, else the first of python3 and /usr/bin/python3 that
# imports torch (numpy for --check); without one it reports itself skipped (exit 77).
source "$(dirname "$0")/run_common.sh"
set +e # a failed sweep still leaves its table
out="${3:-sweep_out}"
shift $(( $# < 3 ? $# : 3 ))
need=torch
case " $* " in *" --check "*) need=numpy ;; esac
py=""
for p in ${CFUSER_PYTHON:-} python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null 2>&1 && "$p" -c "import $need" >/dev/null 2>&1; then py="$p"; break; fi
done
[ -n "$py" ] || { echo "skipped: no Python that imports $need (set CFUSER_PYTHON)"; exit 77; }
[ -f "$build/libcfuser.so" ] || { echo "no $build/libcfuser.so: build first (./cfuser build)"; exit 1; }
export CFUSER_LIBRARY="$(cd "$build" && pwd)/libcfuser.so"
status=0
"$py" "$here/sweep.py" --iters "$iters" --out "$out" "$@" || status=$?
case " $* " in
  *" --check "*) ;; # the check prints its own table
  *) echo; "$py" "$here/sweep.py" --table "$out" > "$out/table.md" || status=1; cat "$out/table.md" ;;
esac
exit $status
