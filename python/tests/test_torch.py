"""PyTorch specifics, on the GPU machine (each skipped with the reason elsewhere): work
queued on a side stream is ordered before cfuser's kernel, outputs come from torch's
allocator on the inputs' device, a tensor that requires grad is refused clearly, sizes
given at run time (scalars passed in host memory, which the kernel never reads) run on
CUDA, and empty tensors of torch's strides are taken (the first run and the fast path)."""
import pytest

import cfuser
from cfuser import DataType, FusionDefinition


def cuda_torch():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    ok, why = cfuser.cuda_available()
    if not torch.cuda.is_available() or not ok:
        pytest.skip(f"no CUDA device for torch and cfuser ({why or 'torch.cuda.is_available() is False'})")
    return torch


def neg_fusion():
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.neg(fd.define_tensor(1)))
    return fd


def test_side_stream_work_is_ordered_before_the_kernel():
    torch = cuda_torch()
    fd = neg_fusion()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        for _ in range(5):  # enough queued work that an unordered kernel would read stale data
            x = torch.ones(1 << 24, device="cuda")
            torch.cuda._sleep(1_000_000)
            y = x * 3
            out, = fd.execute([y])
            assert torch.equal(out, torch.full_like(y, -3))


def test_outputs_are_torch_tensors_on_the_inputs_device():
    torch = cuda_torch()
    out, = neg_fusion().execute([torch.arange(8, dtype=torch.float32, device="cuda")])
    assert isinstance(out, torch.Tensor) and out.device == torch.device("cuda", 0)
    assert out.tolist() == [-float(i) for i in range(8)]


def test_a_tensor_that_requires_grad_is_refused():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    with pytest.raises(cfuser.InvalidArgumentError) as info:
        neg_fusion().execute([torch.ones(4, requires_grad=True)])
    assert str(info.value) == ("execute: input 0: exporting it through DLPack failed: it requires grad, and cfuser "
                               "records no gradients; pass x.detach()")


def test_sizes_given_at_run_time_run_on_cuda():
    torch = cuda_torch()
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        n0 = fd.define_scalar(None, dtype=DataType.Int)
        n1 = fd.define_scalar(None, dtype=DataType.Int)
        fd.add_output(fd.ops.add(fd.ops.full([n0, n1], 2.5, DataType.Float), t))
    x = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4)
    for _ in range(3):  # the first run, then the cached ones
        out, = fd.execute([x, 3, 4])
        assert out.is_cuda and torch.equal(out, x + 2.5)
    y = torch.ones(2, 5, device="cuda")
    out, = fd.execute([y, 2, 5])  # other values: another concrete fusion
    assert torch.equal(out, y + 2.5)


def test_empty_tensors_of_any_strides_on_cuda():
    torch = cuda_torch()
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1, -1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.neg(x))
        fd.add_output(fd.ops.sum(fd.ops.add(x, 1.0), [3]))
    empty = torch.empty_strided((1, 32, 256, 0), (131072, 4096, 16, 1), device="cuda")
    expanded = torch.empty(1, 1, 256, 0, device="cuda").expand(1, 32, 256, 0)  # strides (256, 0, 1, 1)
    for arg in (empty, expanded, empty, expanded):  # the general path, then the fast one
        neg, total = fd.execute([arg])
        assert neg.shape == (1, 32, 256, 0)
        assert total.shape == (1, 32, 256) and torch.equal(total, torch.zeros(1, 32, 256, device="cuda"))
