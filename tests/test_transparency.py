"""Strategies change placement and time, never the math: simulator == plain PyTorch."""
import copy

import pytest
import torch
import torch.nn as nn

from ipu_tutorials import poptorch
from ipu_tutorials.tutorial.models import Network, TrainingModelWithLoss

D, A, MB = 2, 7, 8


def pipelined():
    return poptorch.PipelinedExecution("B1", "B2", "B3", "B4")


def sharded():
    return poptorch.ShardedExecution("B1", "B2", "B3", "B4")


def serial_phased():
    return poptorch.SerialPhasedExecution(
        poptorch.Phase(poptorch.Stage("B1"), poptorch.Stage("B2")),
        poptorch.Phase(poptorch.Stage("B3"), poptorch.Stage("B4")))


def parallel_phased():
    return poptorch.ParallelPhasedExecution(
        poptorch.Phase(poptorch.Stage("B1"), poptorch.Stage("B2")),
        poptorch.Phase(poptorch.Stage("B3"), poptorch.Stage("B4")))


def reference_training(net, optimizer, x, y, d, a, r, mean=True):
    """The plain PyTorch loop: [D][A][R][mb] micro-batches, one update per device iteration."""
    loss_fn = nn.CrossEntropyLoss()
    xs = x.reshape(d, a, r, -1, *x.shape[1:])
    ys = y.reshape(d, a, r, -1)
    for i in range(d):
        for j in range(a):
            for k in range(r):
                loss_fn(net(xs[i, j, k]), ys[i, j, k]).backward()
        if mean:
            for p in net.parameters():
                p.grad /= a * r
        optimizer.step()
        optimizer.zero_grad()


def max_difference(a: nn.Module, b: nn.Module) -> float:
    return max((p - q).abs().max().item() for p, q in zip(a.parameters(), b.parameters()))


def train_both(strategy, optimizer_cls, replicas=1, reduction=poptorch.ReductionType.Mean,
               ipu_kwargs=None, **optimizer_kwargs):
    net = Network()
    reference = copy.deepcopy(net)
    opts = poptorch.Options().deviceIterations(D).replicationFactor(replicas)
    opts.Training.gradientAccumulation(A).accumulationAndReplicationReductionType(reduction)
    opts.setExecutionStrategy(strategy)
    model = poptorch.trainingModel(TrainingModelWithLoss(net), opts,
                                   optimizer_cls(net.parameters(), **optimizer_kwargs,
                                                 **(ipu_kwargs or {})))
    x = torch.randn(D * A * replicas * MB, 1, 28, 28)
    y = torch.randint(0, 10, (len(x),))
    model(x, y)
    torch_cls = getattr(torch.optim, optimizer_cls.__name__)
    reference_training(reference, torch_cls(reference.parameters(), **optimizer_kwargs), x, y,
                       D, A, replicas, mean=reduction == poptorch.ReductionType.Mean)
    return net, reference


@pytest.mark.parametrize("strategy", [pipelined, sharded, serial_phased, parallel_phased])
def test_every_strategy_trains_like_plain_pytorch(strategy):
    net, reference = train_both(strategy(), poptorch.optim.AdamW, lr=1e-3)
    assert max_difference(net, reference) < 1e-5


@pytest.mark.parametrize("strategy", [pipelined, sharded])
def test_replicas_average_their_gradients_like_plain_pytorch(strategy):
    net, reference = train_both(strategy(), poptorch.optim.SGD, replicas=2, lr=0.1, momentum=0.9)
    assert max_difference(net, reference) < 1e-5


def test_sum_reduction_adds_micro_batch_gradients():
    net, reference = train_both(pipelined(), poptorch.optim.SGD,
                                reduction=poptorch.ReductionType.Sum, lr=0.01)
    assert max_difference(net, reference) < 1e-5


def test_loss_scaling_leaves_training_unchanged_in_float32():
    net, reference = train_both(pipelined(), poptorch.optim.SGD, lr=0.05, momentum=0.9,
                                ipu_kwargs={"loss_scaling": 1024.0})
    assert max_difference(net, reference) < 1e-5


@pytest.mark.parametrize("optimizer", ["Adam", "RMSprop"])
def test_other_optimizers_train_like_plain_pytorch(optimizer):
    net, reference = train_both(pipelined(), getattr(poptorch.optim, optimizer), lr=1e-3)
    assert max_difference(net, reference) < 1e-5


def test_pipelined_and_sharded_reach_identical_weights():
    torch.manual_seed(1)
    a, _ = train_both(pipelined(), poptorch.optim.AdamW, lr=1e-3)
    torch.manual_seed(1)
    b, _ = train_both(sharded(), poptorch.optim.AdamW, lr=1e-3)
    assert max_difference(a, b) == 0.0


def test_inference_matches_the_module_on_the_cpu():
    net = Network().eval()
    opts = poptorch.Options().deviceIterations(4)
    opts.setExecutionStrategy(pipelined())
    model = poptorch.inferenceModel(net, opts)
    x = torch.randn(4 * 5, 1, 28, 28)
    torch.testing.assert_close(model(x), net(x))
