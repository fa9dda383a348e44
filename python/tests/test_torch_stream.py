"""execute on PyTorch CUDA tensors: asynchronous on torch's current stream, and the cached
fast path (python/cfuser/_torch_fast.py) giving what the general path gives, errors
included. Skipped, with the reason, where torch or a CUDA device is missing."""
from __future__ import annotations

import pytest

import cfuser
from cfuser import FusionDefinition
from arrays import _torch


@pytest.fixture
def torch():
    return _torch("cuda").xp


def _fusion() -> FusionDefinition:
    with FusionDefinition() as fd:
        a, b = fd.define_tensor(2), fd.define_tensor(1)
        fd.add_output(fd.ops.relu(a * fd.ops.broadcast(b, [True, False]) + a))
        fd.add_output(fd.ops.sum(a, [1]))
    return fd


def _want(torch, a, b):
    return torch.relu(a * b + a), a.sum(1)


def test_repeated_runs_take_the_fast_path_and_match_torch(torch):
    fd = _fusion()
    for rows, cols in ((3, 5), (3, 5), (7, 129), (1, 1), (7, 129)):
        a, b = torch.randn(rows, cols, device="cuda"), torch.randn(cols, device="cuda")
        got = fd.execute([a, b])
        for g, w in zip(got, _want(torch, a, b)):
            assert g.shape == w.shape and g.dtype == w.dtype and g.device == w.device
            torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-4)
    assert fd._torch_fast is not None


def test_runs_on_torchs_current_stream(torch):
    fd = _fusion()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for _ in range(3):  # the first run (general path) and two fast ones
            a = torch.randn(512, 4096, device="cuda")
            b = torch.randn(4096, device="cuda")
            a.mul_(2)  # pending work on s that the kernel must follow
            got = fd.execute([a, b])
            want = _want(torch, a, b)
            for g, w in zip(got, want):  # compared on s: ordered after the kernel
                torch.testing.assert_close(g, w, rtol=1e-3, atol=1e-3)  # sums of 4096
    s.synchronize()


def test_fast_path_errors_are_the_general_paths(torch):
    fd = _fusion()
    fd.execute([torch.ones(2, 3, device="cuda"), torch.ones(3, device="cuda")])  # the fast path is set
    assert fd._torch_fast is not None
    for bad in ([torch.ones(2, 3, device="cuda"), torch.ones(4, device="cuda")],  # sizes that differ
                [torch.ones(6, device="cuda"), torch.ones(3, device="cuda")]):  # a rank that differs
        with pytest.raises(cfuser.CfuserError) as fast:
            fd.execute(bad)
        with pytest.raises(cfuser.CfuserError) as general:
            _fusion().execute(bad)
        assert type(fast.value) is type(general.value) and str(fast.value) == str(general.value)
    with pytest.raises(Exception, match="requires grad"):
        fd.execute([torch.ones(2, 3, device="cuda", requires_grad=True), torch.ones(3, device="cuda")])
    got = fd.execute([torch.ones(2, 3, device="cuda"), torch.ones(3, device="cuda")])  # still works
    torch.testing.assert_close(got[1], torch.full((2,), 3.0, device="cuda"))
