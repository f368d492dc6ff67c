"""Host overhead of the simulator: the tutorial CNN trained through it vs a plain PyTorch loop.

Both do the same math on the same data: 4 IPUs pipelined, micro-batch 40, gradient
accumulation 10, device iterations 10, AdamW. Rounds alternate between the two so that a
busy machine slows both alike. Target: simulator speed / plain speed >= 0.95.

    python benchmarks/host_overhead.py [--rounds 6] [--calls 3]
"""
import argparse
import sys
import time

import torch
import torch.nn as nn

from ipu_tutorials import poptorch, tutorial
from ipu_tutorials.tutorial.datasets import embedded_digits
from ipu_tutorials.tutorial.models import Network, TrainingModelWithLoss

MICRO_BATCH, ACCUMULATION, ITERATIONS = 40, 10, 10
TARGET = 0.95


def plain_call(net, optimizer, loss_fn, images, labels):
    """One call's worth of training, written as a plain PyTorch loop."""
    xs = images.view(ITERATIONS, ACCUMULATION, MICRO_BATCH, 1, 28, 28)
    ys = labels.view(ITERATIONS, ACCUMULATION, MICRO_BATCH)
    for d in range(ITERATIONS):
        for a in range(ACCUMULATION):
            loss_fn(net(xs[d, a]), ys[d, a]).backward()
        for p in net.parameters():
            p.grad /= ACCUMULATION
        optimizer.step()
        optimizer.zero_grad()


def main(rounds: int, calls: int) -> int:
    digits = embedded_digits(True)
    images, labels = digits.images, digits.labels  # 4,000 images: one call
    torch.manual_seed(0)
    net = Network()
    opts = tutorial.training_options("pipelined", ITERATIONS, ACCUMULATION)
    opts.showCompilationProgressBar(False)
    simulated = poptorch.trainingModel(TrainingModelWithLoss(net), opts,
                                       poptorch.optim.AdamW(net.parameters(), lr=0.001))
    plain_net = Network()
    plain_optimizer = torch.optim.AdamW(plain_net.parameters(), lr=0.001)
    loss_fn = nn.CrossEntropyLoss()
    simulated(images, labels)  # compile and warm up both
    plain_call(plain_net, plain_optimizer, loss_fn, images, labels)
    seconds = {"simulator": 0.0, "plain": 0.0}
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(calls):
            simulated(images, labels)
        seconds["simulator"] += time.perf_counter() - started
        started = time.perf_counter()
        for _ in range(calls):
            plain_call(plain_net, plain_optimizer, loss_fn, images, labels)
        seconds["plain"] += time.perf_counter() - started
    images_done = rounds * calls * len(images)
    speed = {k: images_done / v for k, v in seconds.items()}
    ratio = speed["simulator"] / speed["plain"]
    print(f"plain PyTorch: {speed['plain']:,.0f} images/s; simulator: {speed['simulator']:,.0f} "
          f"images/s; ratio {ratio:.3f} (target >= {TARGET})")
    print(f"simulated IPU throughput of the same model: {simulated.plan.samples_per_second:,.0f} images/s")
    return 0 if ratio >= TARGET else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--calls", type=int, default=3)
    args = parser.parse_args()
    sys.exit(main(args.rounds, args.calls))
