"""PyTorch specifics, on the GPU machine (each skipped with the reason elsewhere): work
queued on a side stream is ordered before cfuser's kernel, outputs come from torch's
allocator on the inputs' device, and a tensor that requires grad is refused clearly."""
import pytest

import cfuser
from cfuser import FusionDefinition


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
