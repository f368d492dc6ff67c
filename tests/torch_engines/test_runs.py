"""Lesson 4's model trained by torch.distributed in four real processes: the same numbers as
plain PyTorch (1e-5), the orders torch ran, and the bytes each process held."""
import pytest
import torch
import torch.nn.functional as F

from ipu_tutorials.tutorial.datasets import embedded_digits
from ipu_tutorials.tutorial.models import Network
from ipu_tutorials.torch_engines import runs
from ipu_tutorials.torch_engines.partition import zero_partition, zero_state_bytes
from ipu_tutorials.torch_engines.schedules import torch_orders

GPUS = torch.cuda.device_count()


@pytest.fixture(scope="module")
def digits():
    data = embedded_digits(train=True)
    order = torch.randperm(len(data.labels), generator=torch.Generator().manual_seed(0))[:800]
    return data.images[order], data.labels[order]


def plain_pipeline_losses(images, labels, micro_batches, steps, lr=1e-3):
    torch.manual_seed(0)
    net = Network()
    optimizer = torch.optim.AdamW(net.parameters(), lr=lr)
    losses = []
    for x, y in zip(images.chunk(steps), labels.chunk(steps)):
        optimizer.zero_grad()
        for micro_x, micro_y in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
            loss = F.cross_entropy(net(micro_x), micro_y)
            (loss / micro_batches).backward()
            losses.append(loss.item())
        optimizer.step()
    return losses


@pytest.fixture(scope="module")
def pipelines(digits):
    images, labels = digits
    return {kind: runs.run_pipeline(kind, images, labels, micro_batches=8, steps=2)
            for kind in ("GPipe", "1F1B")}


@pytest.mark.parametrize("kind", ["GPipe", "1F1B"])
def test_pipelined_losses_equal_plain_pytorchs(pipelines, digits, kind):
    reference = plain_pipeline_losses(*digits, micro_batches=8, steps=2)
    assert len(pipelines[kind].losses) == 16
    assert max(abs(a - b) for a, b in zip(pipelines[kind].losses, reference)) < 1e-5


@pytest.mark.parametrize("kind", ["GPipe", "1F1B"])
def test_the_recorded_order_is_torchs_rule(pipelines, kind):
    assert pipelines[kind].orders == torch_orders(kind, 4, 8)
    assert pipelines[kind].seconds > 0


def plain_weights(images, labels, steps, lr=1e-3):
    torch.manual_seed(0)
    net = Network()
    optimizer = torch.optim.AdamW(net.parameters(), lr=lr)
    for x, y in zip(images.chunk(steps), labels.chunk(steps)):
        optimizer.zero_grad()
        F.cross_entropy(net(x), y).backward()
        optimizer.step()
    return runs.flat_weights(net)


@pytest.mark.parametrize("kind", ["zero", "fsdp"])
def test_sharded_state_trains_as_plain_pytorch(digits, kind):
    images, labels = digits[0][:320], digits[1][:320]
    run = runs.run_sharded_state(kind, images, labels, steps=2)
    assert (run.weights - plain_weights(images, labels, 2)).abs().max() < 1e-5
    moments = [b["optimizer"] for b in run.bytes]
    if kind == "zero":  # whole tensors, largest first; weights and gradients whole everywhere
        assert moments == zero_state_bytes(Network(), 4)
        names = {n: p.numel() for n, p in Network().named_parameters()}
        assert [sorted(h) for h in run.holds] == [sorted(n) for n in zero_partition(names, 4)]
        assert {b["weights"] for b in run.bytes} == {b["gradients"] for b in run.bytes} == {360_104}
    else:  # every tensor split by rows: a quarter each, the last rank the rows left over
        assert moments == [181_184] * 3 + [176_656] and sum(moments) == 8 * 90_026
        assert sum(b["weights"] for b in run.bytes) == 360_104
        assert sum(b["gradients"] for b in run.bytes) == 360_104


def plain_replicas(images, labels, micro_batches, reduction, lr=0.05):
    torch.manual_seed(0)
    net = Network()
    for x, y in zip(images.chunk(micro_batches), labels.chunk(micro_batches)):
        loss = F.cross_entropy(net(x), y)
        (loss / micro_batches if reduction == "mean" else loss).backward()
    torch.optim.SGD(net.parameters(), lr=lr).step()
    return runs.flat_weights(net)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_ddp_with_accumulation_reduces_like_plain_pytorch(digits, reduction):
    # was wrong: a forward outside no_sync made DDP all-reduce every micro-batch (Sum grew R times)
    images, labels = digits[0][:320], digits[1][:320]
    run = runs.run_data_parallel(reduction, images, labels, accumulation=8, lr=0.05)
    assert (run.weights - plain_replicas(images, labels, 32, reduction)).abs().max() < 1e-5
    assert run.reduced_bytes == 360_104


@pytest.mark.parametrize("call, message", [
    (lambda x, y: runs.run_pipeline("1F1B", x, y, micro_batches=3), "Number of microbatches (3)"),
    (lambda x, y: runs.run_pipeline("GPipe", x[:95], y[:95], micro_batches=10, steps=1),
     "95 images and 95 labels do not split into 1 step(s) of 10 equal micro-batches"),
    (lambda x, y: runs.run_sharded_state("zero3", x, y), "unknown sharding 'zero3'"),
    (lambda x, y: runs.run_data_parallel("max", x, y, accumulation=2), "unknown reduction 'max'"),
])
def test_bad_arguments_fail_before_any_process_starts(digits, call, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call(*digits)


@pytest.mark.skipif(GPUS >= 4, reason="this machine has the GPUs")
def test_the_gpu_path_needs_a_gpu_per_process(digits):
    with pytest.raises(ValueError, match=f"4 processes need 4 GPUs, this machine has {GPUS}"):
        runs.run_pipeline("GPipe", *digits, micro_batches=10, steps=2, device="cuda")


@pytest.mark.skipif(GPUS < 4, reason="needs 4 CUDA GPUs, one per process")
def test_the_same_runs_on_gpus_over_nccl(digits):
    images, labels = digits
    run = runs.run_pipeline("1F1B", images, labels, micro_batches=8, steps=2, device="cuda")
    reference = plain_pipeline_losses(images, labels, micro_batches=8, steps=2)
    assert max(abs(a - b) for a, b in zip(run.losses, reference)) < 1e-4  # GPU kernels' order
    assert run.orders == torch_orders("1F1B", 4, 8)
    ddp = runs.run_data_parallel("sum", images[:320], labels[:320], accumulation=8, device="cuda")
    assert (ddp.weights - plain_replicas(images[:320], labels[:320], 32, "sum")).abs().max() < 1e-4
    for kind in ("zero", "fsdp"):
        sharded = runs.run_sharded_state(kind, images[:320], labels[:320], steps=2, device="cuda")
        assert (sharded.weights - plain_weights(images[:320], labels[:320], 2)).abs().max() < 1e-4
