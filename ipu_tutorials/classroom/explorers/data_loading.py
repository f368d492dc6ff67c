"""The data-loading explorer: device iterations x micro-batch x loader mode -> where a call's time goes.

Every figure comes from compiling lesson 2's digit classifier (on the meta device) with
poptorch.trainingModel: the host I/O share, the wait for the host's data and the throughput
are the plan's own breakdown of one call, and the timeline is the call the runtime simulates.
"""
from __future__ import annotations

import functools

import torch
from torch import nn

from ... import poptorch
from ...poptorch.data import mark_batch
from ...profiling import plot_timeline, style
from ...simulator.compile import Plan
from ..plans import plan_on_meta
from .widgets import FIGURE_INCHES, Explorer, choice, slider

LOADERS = ("Async", "Sync")  # poptorch.DataLoaderMode names the explorer offers
MICRO_BATCHES = (8, 16, 32, 64)
REPLICAS = (1, 2, 4)
PARTS = ("IPU compute", "exchange and sync", "host I/O", "waiting for host data")
PART_COLOURS = ("#4caf50", "#9e9e9e", "#424242", "#bdbdbd")


class DigitClassifier(nn.Module):
    """Three convolutions and two linear layers for 28x28 digits; returns (logits, loss)
    when given labels, as a PopTorch training model must. Heavy enough that one IPU's work
    per image is comparable to the host's preparation of it."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(),
            nn.Conv2d(32, 64, 3, padding=1), nn.MaxPool2d(2), nn.ReLU(),  # (B, 64, 14, 14)
            nn.Conv2d(64, 64, 3, padding=1), nn.MaxPool2d(2), nn.ReLU())  # (B, 64, 7, 7)
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(64 * 7 * 7, 256), nn.ReLU(),
                                        nn.Linear(256, 10))
        self.loss = nn.CrossEntropyLoss()

    def forward(self, images, labels=None):  # images: (B, 1, 28, 28)
        logits = self.classifier(self.features(images))  # (B, 10)
        if labels is None:
            return logits
        return logits, self.loss(logits, labels)


def combined_batch(options: poptorch.Options, micro_batch: int) -> int:
    """Samples one call consumes: micro-batch x D x R x A (poptorch.DataLoader's batch)."""
    return (micro_batch * options.device_iterations * options.replication_factor
            * options.Training.gradient_accumulation)


def plan_call(options: poptorch.Options, micro_batch: int = 32, loader: str = "Async") -> Plan:
    """Compile the digit classifier for training under `options`, fed by a `loader` DataLoader.

    Args:
        options: the learner's options (they are cloned, not changed).
        micro_batch: the DataLoader's batch_size.
        loader: "Async" (the host prepares the next call's data while the IPU runs) or "Sync"
            (it prepares each call's data before the call, while the IPU waits).
    Returns:
        The simulator's plan of one call.
    Raises:
        ValueError: an unknown loader mode.
        poptorch.Error: the options break a batching rule.
    """
    if loader not in LOADERS:
        raise ValueError(f"unknown loader mode {loader!r}; choose one of {', '.join(LOADERS)}")
    with torch.device("meta"):
        model = DigitClassifier()
    samples = combined_batch(options, micro_batch)
    batch = mark_batch([torch.empty(samples, 1, 28, 28, device="meta"),
                        torch.empty(samples, dtype=torch.long, device="meta")],
                       prepared_ahead=loader == "Async")
    return plan_on_meta(model, options.clone(), poptorch.optim.SGD(model.parameters(), lr=0.01),
                        *batch)


def share(plan: Plan, part: str = "host I/O") -> float:
    """The fraction of one call's simulated time that `part` of plan.breakdown() takes."""
    return plan.breakdown()[part] / plan.call_seconds


@functools.lru_cache(maxsize=256)
def loading_plan(device_iterations: int, micro_batch: int, loader: str, replicas: int = 1) -> Plan:
    """The explorer's plan: plain options with these counts."""
    opts = poptorch.Options().deviceIterations(device_iterations).replicationFactor(replicas)
    return plan_call(opts, micro_batch, loader)


def describe(plan: Plan, loader: str) -> str:
    spec = plan.spec
    shares = {part: share(plan, part) for part in PARTS}
    # the rule Plan.breakdown_text applies: any wait beyond rounding means the host sets the pace
    bound = "host-bound" if shares["waiting for host data"] > 1e-6 else "device-bound"
    return (f"{spec.samples_per_call:,} images per call (micro-batch {spec.micro_batch} x "
            f"{spec.device_iterations} device iterations x {spec.replication_factor} "
            f"replica(s)), {loader} loader: a call takes {plan.call_seconds * 1e3:,.3f} ms "
            f"(simulated), <b>host I/O {shares['host I/O']:.1%}</b>, waiting for host data "
            f"{shares['waiting for host data']:.1%}, IPU compute {shares['IPU compute']:.1%}; "
            f"<b>{plan.samples_per_second:,.0f} images/s</b>, {bound}")


def draw(plan: Plan, figure) -> None:
    """The call's timeline, and its time split into the breakdown's four parts."""
    timeline_axis, parts_axis = figure.subplots(
        2, 1, gridspec_kw={"height_ratios": [3, 1]})
    plot_timeline(plan.timeline.events, plan.placement.ipus_per_replica, ax=timeline_axis,
                  title="one call (replica 0)", label_micro_batches=False)
    left = 0.0
    for part, colour in zip(PARTS, PART_COLOURS):
        width = share(plan, part)
        parts_axis.barh(0, width, left=left, color=colour, label=part)
        if width > 0.06:
            parts_axis.text(left + width / 2, 0, f"{width:.0%}", ha="center", va="center",
                            color="white" if part != "waiting for host data" else "black",
                            fontsize=style.points(figure, style.TEXT_PX))
        left += width
    parts_axis.set(xlim=(0, 1), yticks=[], xlabel="share of the call")
    style.readable(parts_axis)
    figure.tight_layout()
    style.legend_below(parts_axis)
    figure.tight_layout()


def data_loading_explorer(device_iterations: int = 1, micro_batch: int = 32,
                          loader: str = "Async", replicas: int = 1) -> Explorer:
    """Change device iterations, micro-batch, loader mode and replicas; see one call's time."""
    controls = {"device_iterations": slider("device iterations", device_iterations, 1, 64),
                "micro_batch": choice("micro-batch", MICRO_BATCHES, micro_batch),
                "loader": choice("loader mode", LOADERS, loader),
                "replicas": choice("replicas", REPLICAS, replicas)}

    def compute(device_iterations, micro_batch, loader, replicas):
        plan = loading_plan(device_iterations, micro_batch, loader, replicas)
        return {"plan": plan, "text": describe(plan, loader)}

    return Explorer("Data-loading explorer: device iterations, micro-batch and loader mode",
                    controls, compute, lambda result, figure: draw(result["plan"], figure),
                    figsize=(FIGURE_INCHES, 5.4))
