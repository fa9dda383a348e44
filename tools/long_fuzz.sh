#!/usr/bin/env bash
# tools/long_fuzz.sh BUILD_DIR JOBS [SEEDS] [MODE...]: the fuzzers' long runs, for
# `./cfuser fuzz` (the suite runs a few seeds of each; this runs thousands).
#
# One run per mode: every range test (`*_like_the_evaluator`) of the DAG fuzzer
# (kernels_test_random_dags: one per generator mode), of the random-schedule fuzzer
# (kernels_test_random_schedules) and of the matmul forms (scheduler_test_matmul_forms),
# one after another, each with JOBS workers. A mode's
# seeds go in chunks (so no chunk nears a test's own time limit), each chunk printing a
# progress line every CFUSER_FUZZ_PROGRESS seconds (default 5); at the end one line per
# mode with its seed range and counts, and a total. Exits 1 when any seed gave a wrong
# result or crashed. Environment: CFUSER_FUZZ_FIRST (first seed, default 1000000, away from
# the suite's seeds), CFUSER_FUZZ_CHUNK (seeds per chunk, default 100 per job).
set -uo pipefail
build="$1" jobs="$2"
shift 2
seeds=2000
if [ $# -gt 0 ] && [[ "$1" =~ ^[0-9]+$ ]]; then seeds="$1"; shift; fi
first="${CFUSER_FUZZ_FIRST:-1000000}"
chunk="${CFUSER_FUZZ_CHUNK:-$((100 * jobs))}"
export CFUSER_FUZZ_PROGRESS="${CFUSER_FUZZ_PROGRESS:-5}" CFUSER_VERIFY=1 CFUSER_FUZZ_JOBS="$jobs"
say() { printf 'fuzz: %s\n' "$*"; }

# "binary test" for every range test of the fuzzers, filtered by the MODE arguments.
modes=()
for bin in kernels_test_random_dags kernels_test_random_schedules scheduler_test_matmul_forms; do
  [ -x "$build/$bin" ] || { say "$build/$bin is missing (build first)"; exit 2; }
  while read -r name; do
    if [ $# -eq 0 ] || printf '%s\n' "$@" | grep -qx "$name"; then modes+=("$bin $name"); fi
  done < <("$build/$bin" --list | sed -n 's/^[^a-z]*\([a-z_0-9]*_like_the_evaluator\)$/\1/p')
done
[ ${#modes[@]} -gt 0 ] || { say "no mode matches: $*"; exit 2; }
say "${#modes[@]} modes, $seeds seeds each from $first, $jobs workers, chunks of $chunk seeds"

total_bad=0 summary=()
for m in "${modes[@]}"; do
  bin="${m% *}" name="${m#* }" suite="${bin#*_test_}"
  acc=0 ref=0 bad=0 crash=0 start=$(date +%s) failed=0
  for ((lo = first; lo < first + seeds; lo += chunk)); do
    n=$((first + seeds - lo < chunk ? first + seeds - lo : chunk))
    out="$(mktemp)"
    # random_schedules counts with CFUSER_FUZZ_ITERS and runs in one process.
    CFUSER_FUZZ_FIRST="$lo" CFUSER_FUZZ_COUNT="$n" CFUSER_FUZZ_ITERS="$n" \
      "$build/$bin" --jobs 1 --verbose --timeout 100000 --filter "$suite/$name" 2>&1 | tee "$out" |
      grep --line-buffered -E '^random_dags mode|^seed [0-9]+:' | sed -u "s/^/fuzz: $name: /"
    if [ "${PIPESTATUS[0]}" != 0 ]; then
      # a chunk whose only failed assertion is the acceptance floor (a CI sanity check: a
      # tenth or fifth of the seeds accepted) found nothing wrong: said, not counted as bad
      asserts=$(grep -c 'Assertion Failed' "$out") floors=$(grep -c 'schedules were accepted' "$out")
      if [ "$asserts" -gt 0 ] && [ "$asserts" = "$floors" ]; then
        say "$name: seeds $lo..$((lo + n - 1)): fewer accepted than the suite's floor (not a wrong result)"
      else
        failed=1
      fi
    fi
    line="$(grep -E '^random_dags: seeds' "$out" | tail -1)"
    if [ -n "$line" ]; then
      read -r a r b c < <(sed -E 's/.*accepted ([0-9]+), refused ([0-9]+), mismatches ([0-9]+), crashes ([0-9]+).*/\1 \2 \3 \4/' <<<"$line")
    else # random_schedules, matmul_forms: "N of M random ... compiled and ran"; failures are its asserts
      a="$(sed -nE 's/.* ([0-9]+) of [0-9]+ random [a-z ]+ compiled and ran.*/\1/p' "$out" | tail -1)"
      a="${a:-0}" r=$((n - a)) b=$(grep -c 'Assertion Failed' "$out") c=$(grep -c 'CRASH' "$out")
    fi
    acc=$((acc + a)) ref=$((ref + r)) bad=$((bad + b)) crash=$((crash + c))
    say "$name: seeds $first..$((lo + n - 1)): accepted $acc, refused $ref, mismatches $bad, crashes $crash ($(( $(date +%s) - start )) s)"
    rm -f "$out"
  done
  [ "$failed" = 1 ] && [ $((bad + crash)) = 0 ] && bad=1 # a failed test without a counted seed
  total_bad=$((total_bad + bad + crash))
  summary+=("$suite/$name: seeds $first..$((first + seeds - 1)): accepted $acc, refused $ref, mismatches $bad, crashes $crash, $(( $(date +%s) - start )) s")
done
say "summary:"
for l in "${summary[@]}"; do say "  $l"; done
say "$(( ${#modes[@]} * seeds )) seeds in ${#modes[@]} modes: $total_bad bad"
[ "$total_bad" = 0 ]
