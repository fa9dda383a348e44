#!/usr/bin/env python3
"""Where a ctest test's seconds go: kernel compiles (NVRTC, the host C compiler), lowering
and codegen, and the rest (running kernels on the host backend, the reference evaluator,
scheduling, Python).

Each test named runs alone through ctest, with a cold kernel cache of its own and
CFUSER_DUMP=times sent to a file; every compile's line of that dump ("=== compile of K
(host|CUDA): lowering a ms, codegen b ms, NVRTC|C compiler c ms ===") is summed. The rest
is the test's wall time less the compiles. Run it on a quiet machine: the figures are
wall seconds. A test that pins a dump of its own (CFUSER_DUMP=segments on stderr) fails
under the file dump: its row says FAILED, its seconds still count.

    tools/test_times.py BUILD_DIR [REGEX...]   the tests whose names match (ctest -R), in turn
    tools/test_times.py BUILD_DIR --top N      the N longest of the last ctest run there
                                               (Testing/Temporary/CTestCostData.txt)

Prints one row per test: wall seconds; CPU seconds (the test and every process it waited
for: the figure a loaded machine changes least); count, disk-cache hits among them and
seconds of host compiles (cc); count and seconds of NVRTC compiles; lowering plus codegen
seconds; the rest; then the totals.
"""
import os
import re
import subprocess
import sys
import tempfile
import time

LINE = re.compile(r"=== compile of \S+ \((host|CUDA)\): lowering ([0-9.]+) ms, codegen ([0-9.]+) ms, "
                  r"(?:NVRTC|C compiler) ([0-9.]+) ms( \(disk cache hit\))? ===")


def top_tests(build, n):
    """The n costliest tests of the last ctest run in build (name, average seconds)."""
    rows = []
    with open(os.path.join(build, "Testing", "Temporary", "CTestCostData.txt")) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3:
                rows.append((float(parts[2]), parts[0]))
    return [name for _, name in sorted(rows, reverse=True)[:n]]


def listed_tests(build, regex):
    out = subprocess.run(["ctest", "-N", "-R", regex], cwd=build, capture_output=True, text=True).stdout
    return re.findall(r"Test +#\d+: (\S+)", out)


def measure(build, name):
    """(wall, CPU seconds, {backend: [compiles, compile s, lower+codegen s, disk hits]}, passed) of one
    test, cold."""
    with tempfile.TemporaryDirectory() as cache:
        dump = os.path.join(cache, "dump.txt")
        env = dict(os.environ, CFUSER_CACHE_DIR=os.path.join(cache, "k"), CFUSER_DUMP="times",
                   CFUSER_DUMP_FILE=dump)
        t0 = time.monotonic()
        p = subprocess.Popen(["ctest", "-R", "^" + re.escape(name) + "$", "--timeout", "3000"], cwd=build, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, use = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - t0
        cpu = use.ru_utime + use.ru_stime  # ctest, the test and every process it waited for
        sums = {"host": [0, 0.0, 0.0, 0], "CUDA": [0, 0.0, 0.0, 0]}
        if os.path.exists(dump):
            with open(dump, errors="replace") as f:
                for m in LINE.finditer(f.read()):
                    s = sums[m.group(1)]
                    s[0] += 1
                    s[1] += float(m.group(4)) / 1e3
                    s[2] += (float(m.group(2)) + float(m.group(3))) / 1e3
                    s[3] += bool(m.group(5))
        return wall, cpu, sums, p.returncode == 0


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    build = argv[1]
    if argv[2:3] == ["--top"]:
        names = top_tests(build, int(argv[3]))
    else:
        names = [n for rx in argv[2:] or ["."] for n in listed_tests(build, rx)]
    head = f"{'test':58} {'wall s':>7} {'cpu s':>7} {'cc n':>5} {'hits':>4} {'cc s':>6} {'nvrtc n':>7} {'nvrtc s':>7} {'lower s':>7} {'rest s':>7}"
    print(head)
    tot = [0.0] * 9
    for name in names:
        wall, cpu, s, ok = measure(build, name)
        h, c = s["host"], s["CUDA"]
        rest = wall - h[1] - c[1] - h[2] - c[2]
        row = [wall, h[0], h[1], c[0], c[1], h[2] + c[2], rest, h[3], cpu]
        tot = [a + b for a, b in zip(tot, row)]
        print(f"{name + ('' if ok else ' (FAILED)'):58} {wall:7.1f} {cpu:7.1f} {h[0]:5d} {h[3]:4d} {h[1]:6.1f} {c[0]:7d} {c[1]:7.1f} "
              f"{row[5]:7.1f} {rest:7.1f}", flush=True)
    print(f"{'total':58} {tot[0]:7.1f} {tot[8]:7.1f} {int(tot[1]):5d} {int(tot[7]):4d} {tot[2]:6.1f} {int(tot[3]):7d} {tot[4]:7.1f} {tot[5]:7.1f} "
          f"{tot[6]:7.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
