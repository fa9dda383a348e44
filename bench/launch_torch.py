"""PyTorch's figures for bench/launch.c's work: out = a * b + c over 4096 floats
(torch.addcmul, one kernel), eager and as a CUDA graph replay:
  - the CPU time of one call, median over 10,000 (the queue drained every 256 calls,
    outside the timing);
  - the wall time of 1,000 back-to-back calls, synchronized once at the end.
Prints lines in the same form as bench/launch.c."""
import time

import torch

N, LAUNCHES, BACK_TO_BACK, DRAIN = 4096, 10000, 1000, 256


def cpu_cost(fn):
    times = []
    for i in range(LAUNCHES):
        if i % DRAIN == 0:
            torch.cuda.synchronize()
        t0 = time.perf_counter_ns()
        fn()
        times.append((time.perf_counter_ns() - t0) / 1e3)
    torch.cuda.synchronize()
    times.sort()
    return times[len(times) // 2]


def wall(fn):
    torch.cuda.synchronize()
    t0 = time.perf_counter_ns()
    for _ in range(BACK_TO_BACK):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter_ns() - t0) / 1e3


def main():
    a, b, c = (torch.rand(N, device="cuda") for _ in range(3))
    out = torch.empty(N, device="cuda")
    eager = lambda: torch.addcmul(c, a, b, out=out)
    eager_alloc = lambda: torch.addcmul(c, a, b)
    for fn in (eager, eager_alloc):
        for _ in range(100):
            fn()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            eager()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        eager()
    replay = g.replay
    print(f"torch eager CPU (output given, median of {LAUNCHES}) {cpu_cost(eager):.2f} us")
    print(f"torch eager CPU (output allocated, median of {LAUNCHES}) {cpu_cost(eager_alloc):.2f} us")
    print(f"CUDA graph replay CPU (median of {LAUNCHES}) {cpu_cost(replay):.2f} us")
    for name, fn in (("torch eager", eager), ("CUDA graph replay", replay)):
        w = wall(fn)
        print(f"{name} wall of {BACK_TO_BACK} back-to-back launches {w:.1f} us ({w / BACK_TO_BACK:.2f} us each)")


if __name__ == "__main__":
    main()
