"""The pipelining tutorial's flow: options per strategy, training and test loops, a closing summary.

mnist_pipeline.py and the lessons both call these, so what the script prints is what the
notebooks teach.
"""
from __future__ import annotations

import dataclasses

import torch
from tqdm.auto import tqdm

from .. import poptorch
from .models import accuracy
from ..simulator.units import format_bytes

BLOCKS = ("B1", "B2", "B3", "B4")


def strategy(name: str):
    """The tutorial's two strategies: B1..B4 on IPUs 0..3, pipelined or sharded."""
    stages = [poptorch.Stage(block).ipu(ipu) for ipu, block in enumerate(BLOCKS)]
    if name == "pipelined":
        return poptorch.PipelinedExecution(*stages)
    if name == "sharded":
        return poptorch.ShardedExecution(*stages)
    raise ValueError(f"unknown strategy {name!r}; choose 'pipelined' or 'sharded'")


def training_options(strategy_name: str, device_iterations: int, gradient_accumulation: int,
                     offload_optimiser: bool = False, output_all: bool = True) -> poptorch.Options:
    opts = poptorch.Options().deviceIterations(device_iterations)
    opts.Training.gradientAccumulation(gradient_accumulation)
    opts.setExecutionStrategy(strategy(strategy_name))
    if offload_optimiser:
        opts.TensorLocations.setOptimizerLocation(
            poptorch.TensorLocationSettings().useOnChipStorage(False))
    if output_all:  # every micro-batch's predictions, for the training accuracy
        opts.outputMode(poptorch.OutputMode.All)
    return opts


def inference_options(train_opts: poptorch.Options, device_iterations: int) -> poptorch.Options:
    """The training options without gradient accumulation, as the tutorial derives them."""
    opts = train_opts.clone()
    opts.Training.gradientAccumulation(1)
    opts.deviceIterations(device_iterations)
    opts.outputMode(poptorch.OutputMode.All)
    return opts


def whole_calls(samples: int, batch_size: int, most: int = 100, least: int = 1) -> int:
    """The largest device-iteration count in [least, most] that splits `samples` into whole
    calls of `batch_size`-sample micro-batches, so that every sample is used.

    Raises:
        ValueError: no such count (too few samples for the batch size).
    """
    batches = samples // batch_size
    counts = [d for d in range(least, min(most, batches) + 1) if batches % d == 0]
    if not counts:
        raise ValueError(f"{samples} samples in micro-batches of {batch_size} make {batches} "
                         f"micro-batch(es), which no device-iteration count from {least} to "
                         f"{most} divides: use a smaller batch size")
    return max(counts)


def check_one_call_fits(images_per_call: int, dataset_size: int, flags: str) -> None:
    """A training set must hold at least one call's images, or an epoch would train nothing.

    Raises:
        poptorch.Error: naming both counts and the flags that set the call's size.
    """
    if images_per_call > dataset_size:
        raise poptorch.Error(f"one call consumes {images_per_call:,} images but the training "
                             f"set has {dataset_size:,}: lower {flags}")


@dataclasses.dataclass
class EpochStats:
    epoch: int
    loss: float
    accuracy: float  # percent, over the epoch's returned predictions


def train(training_model, training_data, epochs: int, progress: bool = True,
          log=print) -> list[EpochStats]:
    """The tutorial's loop: a bar per epoch with loss, accuracy and simulated throughput."""
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"epochs must be a positive integer, got {epochs!r}")
    if len(training_data) == 0:
        raise ValueError("the training data holds no whole call of the model: lower the batch "
                         "size, device iterations or gradient accumulation")
    history = []
    for epoch in range(1, epochs + 1):
        losses, correct, seen = [], 0.0, 0
        bar = tqdm(training_data, total=len(training_data), disable=not progress, leave=False,
                   desc=f"Epoch {epoch}/{epochs}")
        for data, labels in bar:
            preds, batch_losses = training_model(data, labels)
            losses.append(torch.mean(batch_losses).item())
            rows = preds.size()[0]
            correct += accuracy(preds, labels) * rows / 100
            seen += rows
            if progress:
                bar.set_postfix_str(f"Loss:{losses[-1]:0.4f} | Accuracy:{100 * correct / seen:0.2f}% "
                                    f"| {training_model.plan.samples_per_second:,.0f} img/s simulated")
        history.append(EpochStats(epoch, sum(losses) / len(losses), 100 * correct / seen))
        if log is not None:
            # three decimals: the fourth moves with the CPU's kernels (float sums in another order)
            log(f"Epoch {epoch}/{epochs}: loss {history[-1].loss:.3f}, "
                f"training accuracy {history[-1].accuracy:.2f}%")
    return history


def test(inference_model, test_data, progress: bool = True) -> float:
    """Accuracy (percent) over every sample of `test_data`."""
    correct, seen = 0.0, 0
    for data, labels in tqdm(test_data, total=len(test_data), disable=not progress, leave=False,
                             desc="Test"):
        output = inference_model(data)
        correct += accuracy(output, labels) * len(labels) / 100
        seen += len(labels)
    return 100 * correct / seen


def summary_table(training_model) -> str:
    """Simulated time per step, throughput, and placement and memory per IPU."""
    plan = training_model.plan
    spec = plan.spec
    step = plan.device_seconds / spec.device_iterations  # IPUs and host link, no data wait
    util = plan.timeline.utilisation()
    lines = [f"Simulated IPU time per step: {step * 1e3:.3f} ms "
             f"({spec.micro_batch} x {spec.gradient_accumulation} samples); throughput "
             f"{plan.samples_per_second:,.0f} samples/s with the host preparing the data "
             f"({spec.strategy.kind}, {spec.system.ipu.name})", plan.breakdown_text(), "",
             f"{'IPU':>3}  {'blocks':<8}{'memory':>12}{'of':>12}{'use':>6}  {'off chip':>10}  busy"]
    for m in plan.memory.ipus:
        blocks = ",".join(b for s in plan.placement.stages_on(m.ipu) for b in s.blocks)
        lines.append(f"{m.ipu:>3}  {blocks:<8}{format_bytes(m.total):>12}"
                     f"{format_bytes(m.capacity):>12}{m.utilisation:>6.1%}  "
                     f"{format_bytes(sum(m.off_chip.values())):>10}  {util[m.ipu]:.0%}")
    return "\n".join(lines)
