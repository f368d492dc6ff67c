"""The ported model's step: where a call's simulated time goes, by batch size and device iterations.

Every figure comes from compiling the model with poptorch.trainingModel (on the meta device:
shapes only) and reading the plan: the call's simulated seconds and their breakdown into IPU
compute, exchange, host I/O and waiting for host data (Plan.breakdown).
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Callable

import torch

from ... import poptorch
from ...profiling import style
from ...tutorial.models import DigitClassifierWithLoss  # lesson 1's model: the explorer's default
from .widgets import FIGURE_INCHES, Explorer, choice

BATCH_SIZES = (4, 16, 64, 256)
DEVICE_ITERATIONS = (1, 2, 4, 8, 16, 32, 64)
PARTS = ("IPU compute", "exchange and sync", "host I/O", "waiting for host data")
COLOURS = ("#1565c0", "#7e57c2", "#ef6c00", "#bdbdbd")


@dataclasses.dataclass(frozen=True)
class StepCost:
    """One compiled configuration: its call's simulated time and where that time goes."""

    batch_size: int
    device_iterations: int
    call_seconds: float
    samples_per_second: float
    parts: dict  # PARTS -> simulated seconds of one call

    @property
    def samples_per_call(self) -> int:
        return self.batch_size * self.device_iterations

    @property
    def host_share(self) -> float:
        """The fraction of the call the IPUs spend on host I/O or waiting for host data."""
        return (self.parts["host I/O"] + self.parts["waiting for host data"]) / self.call_seconds


@functools.lru_cache(maxsize=128)
def step_cost(make_model: Callable[[], torch.nn.Module], batch_size: int,
              device_iterations: int) -> StepCost:
    """Compile `make_model()` for training at this batch size and device-iteration count.

    Args:
        make_model: builds the model with its loss (called under the meta device).
        batch_size: the micro-batch, samples per device iteration.
        device_iterations: how many steps one call runs on the device.
    Returns:
        The simulated cost of one call.
    """
    with torch.device("meta"):
        model = make_model()
    opts = poptorch.Options().deviceIterations(device_iterations)
    opts.showCompilationProgressBar(False)
    training = poptorch.trainingModel(model, opts, poptorch.optim.SGD(model.parameters(), lr=0.1))
    samples = batch_size * device_iterations
    training.compile(torch.zeros(samples, 1, 28, 28, device="meta"),
                     torch.zeros(samples, dtype=torch.long, device="meta"))
    plan = training.plan
    training.destroy()
    return StepCost(batch_size, device_iterations, plan.call_seconds, plan.samples_per_second,
                    plan.breakdown())


def describe(cost: StepCost, best: StepCost) -> str:
    return (f"batch {cost.batch_size} x {cost.device_iterations} device iteration(s) = "
            f"{cost.samples_per_call:,} samples per call: <b>{cost.call_seconds * 1e3:.2f} ms</b> "
            f"per call (simulated), <b>{cost.samples_per_second:,.0f} samples/s</b>; host I/O and "
            f"waiting for host data take {cost.host_share:.0%} of the call. At this batch size, "
            f"{best.device_iterations} device iterations reach "
            f"{best.samples_per_second:,.0f} samples/s.")


def draw(costs: list[StepCost], chosen: int, figure) -> None:
    """Per-sample time split into its parts (left) and throughput (right), across D."""
    per_sample, speed = figure.subplots(1, 2)
    labels = [str(c.device_iterations) for c in costs]
    bottom = [0.0] * len(costs)
    for part, colour in zip(PARTS, COLOURS):
        heights = [c.parts[part] / c.samples_per_call * 1e6 for c in costs]
        per_sample.bar(labels, heights, bottom=bottom, color=colour, label=part)
        bottom = [b + h for b, h in zip(bottom, heights)]
    per_sample.set(xlabel="device iterations", ylabel="µs per sample (simulated)",
                   title=f"where each sample's time goes (batch {costs[0].batch_size})")
    speed.plot(labels, [c.samples_per_second for c in costs], marker="o", color="#1565c0")
    index = [c.device_iterations for c in costs].index(chosen)
    speed.plot([labels[index]], [costs[index].samples_per_second], marker="o", markersize=12,
               color="#c62828", label="chosen")
    speed.set(xlabel="device iterations", ylabel="samples/s (simulated)", title="throughput",
              ylim=(0, None))
    for ax in (per_sample, speed):  # legends under the axes: a tall bar never meets them
        style.readable(ax)
    figure.tight_layout()
    for ax in (per_sample, speed):
        style.legend_below(ax)
    figure.tight_layout()


def step_explorer(make_model: Callable[[], torch.nn.Module] = DigitClassifierWithLoss,
                  batch_size: int = 16, device_iterations: int = 1) -> Explorer:
    """Choose the batch size and device iterations of a ported MNIST model; see its step.

    Args:
        make_model: a class or function building the model with its loss; compiled on the
            meta device for inputs of shape (batch, 1, 28, 28) and labels (batch,).
        batch_size, device_iterations: the starting values of the two controls.
    Returns:
        The explorer widget (display it, or read .result and .text).
    """
    controls = {"batch_size": choice("batch size", BATCH_SIZES, batch_size),
                "device_iterations": choice("device iterations", DEVICE_ITERATIONS,
                                            device_iterations)}

    def compute(batch_size, device_iterations):
        costs = [step_cost(make_model, batch_size, d) for d in DEVICE_ITERATIONS]
        cost = costs[DEVICE_ITERATIONS.index(device_iterations)]
        best = max(costs, key=lambda c: c.samples_per_second)
        return {"costs": costs, "cost": cost, "chosen": device_iterations,
                "text": describe(cost, best)}

    return Explorer("Step explorer: batch size x device iterations", controls, compute,
                    lambda result, figure: draw(result["costs"], result["chosen"], figure),
                    figsize=(FIGURE_INCHES, 4))
