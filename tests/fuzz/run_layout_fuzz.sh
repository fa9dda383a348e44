#!/bin/sh
# tests/fuzz/run_layout_fuzz.sh: builds the libFuzzer harness of the layout parser and
# calculator (tests/fuzz/fuzz_layout.c) with clang, ASan and UBSan, and runs it.
#
#   run_layout_fuzz.sh SECONDS [WORK_DIR]     (default WORK_DIR: a fresh temporary one)
#
# CI runs it for a few seconds (ctest -R layout_libfuzzer); run it for 30 minutes or more
# by hand, e.g. `nice -n 19 tests/fuzz/run_layout_fuzz.sh 1800 /tmp/layout-fuzz`. The
# corpus grows in WORK_DIR/corpus, seeded from tests/fuzz/layout_seeds. Exit status: 0 no
# finding, 1 a finding (the crashing input is left in WORK_DIR), 77 skipped (no clang or
# no libFuzzer), as ctest's SKIP_RETURN_CODE expects.
set -eu
src="$(cd "$(dirname "$0")/../.." && pwd)"
seconds="${1:?usage: run_layout_fuzz.sh SECONDS [WORK_DIR]}"
work="${2:-$(mktemp -d)}"
cc="${CFUSER_FUZZ_CC:-clang}"
if ! command -v "$cc" >/dev/null 2>&1; then
  echo "layout fuzz skipped: $cc not found (install clang to run the libFuzzer harness)"
  exit 77
fi
mkdir -p "$work/corpus"
bin="$work/fuzz_layout"
if ! "$cc" -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=undefined -I"$src/include" -I"$src" -I"$src/tools" \
    "$src"/layout/*.c "$src/tools/cmd_layout.c" "$src/tests/fuzz/fuzz_layout.c" -o "$bin" \
    2>"$work/build.log"; then
  if grep -q "fuzzer" "$work/build.log"; then
    echo "layout fuzz skipped: $cc cannot link libFuzzer (see $work/build.log)"
    exit 77
  fi
  cat "$work/build.log"
  exit 1
fi
cd "$work"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  "$bin" -max_total_time="$seconds" -max_len=512 -timeout=20 -rss_limit_mb=2048 -close_fd_mask=3 \
  -print_final_stats=1 corpus "$src/tests/fuzz/layout_seeds" >"$work/fuzz.log" 2>&1 || {
  tail -60 "$work/fuzz.log"
  echo "layout fuzz: FINDING (inputs in $work)"
  exit 1
}
grep -E "^stat::number_of_executed_units|^#[0-9]+ +DONE" "$work/fuzz.log" || true
echo "layout fuzz: no finding in $seconds s"
