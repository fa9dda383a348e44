"""Issue 28: one FusionDefinition executed from 8 threads at once gives every thread its
own right results (each execute builds its own argument arrays; the runs of a backend take
turns), on define and run and on a hand-scheduled kernel, with outputs repeated and an
input returned."""
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from cfuser import FusionDefinition


def _define(scheduled):
    with FusionDefinition() as fd:
        a, b = fd.define_tensor(2), fd.define_tensor(2)
        c = fd.ops.exp(a) * b + 1.0
        fd.add_output(c)
        fd.add_output(c)  # the same tensor twice: returned twice
        fd.add_output(a)
        if not scheduled:
            fd.add_output(fd.ops.sum(c, [1]))
    if scheduled:
        fd.sched.schedule_pointwise()
    return fd


def _hammer(fd, nout, calls=48):
    rng = np.random.default_rng(0)
    cases = [(rng.standard_normal((r, 37), dtype=np.float32), rng.standard_normal((r, 37), dtype=np.float32))
             for r in (1, 3, 5, 8) for _ in range(calls // 4)]

    def one(case):
        a, b = case
        return a, b, fd.execute([a, b])

    with ThreadPoolExecutor(max_workers=8) as pool:
        for a, b, out in pool.map(one, cases):
            want = np.exp(a) * b + 1
            assert len(out) == nout
            np.testing.assert_allclose(out[0], want, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(out[1], want, rtol=1e-5, atol=1e-6)
            assert out[2] is a
            if nout == 4:
                np.testing.assert_allclose(out[3], want.sum(1), rtol=1e-4, atol=1e-5)


def test_define_and_run_from_eight_threads():
    _hammer(_define(False), 4)


def test_hand_scheduled_from_eight_threads():
    _hammer(_define(True), 3)
