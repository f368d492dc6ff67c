"""Plans without data: compile a model built on the meta device and keep the simulator's plan.

Explorers and exercises ask "what would the IPUs do with this model and these options?"
many times a second; on the meta device a model of any size compiles in milliseconds, and
the plan is the runtime's own (poptorch.trainingModel compiles it).
"""
from __future__ import annotations

import torch

from .. import poptorch
from ..simulator.compile import Plan


def plan_on_meta(model: torch.nn.Module, options: poptorch.Options, optimizer,
                 *inputs: torch.Tensor) -> Plan:
    """Compile `model` for training on inputs like `inputs` and return its plan.

    Args:
        model: built under `torch.device("meta")` (or with real weights; they are not read).
        options: the options to compile with (the compilation progress bar is turned off).
        optimizer: over the model's parameters.
        inputs: one call's inputs, usually meta tensors.

    Raises:
        poptorch.Error: the options or the model break a placement or batching rule.
        OutOfMemoryError: the plan does not fit; its `plan` is the memory plan that does not.
    """
    training = poptorch.trainingModel(model, options.showCompilationProgressBar(False), optimizer)
    try:
        training.compile(*inputs)
        return training.plan
    finally:
        training.destroy()


def lesson_plan(strategy, accumulation: int = 10) -> Plan:
    """The tutorial's configuration as lessons 4 and 5 use it (D 10, OutputMode.All, AdamW),
    under `strategy`: prose, checks and tables of both lessons share it."""
    from ..tutorial.loops import training_options
    return tutorial_plan(strategy, accumulation, device_iterations=10,
                         options=training_options("pipelined", 10, accumulation))


def tutorial_plan(strategy, accumulation: int = 8, device_iterations: int = 1,
                  micro_batch: int = 40, options: poptorch.Options | None = None) -> Plan:
    """The tutorial CNN (with its loss and AdamW) compiled on the meta device under `strategy`.

    Raises:
        poptorch.Error: the strategy breaks a placement rule.
    """
    from ..tutorial.models import Network, TrainingModelWithLoss

    with torch.device("meta"):
        model = TrainingModelWithLoss(Network())
    opts = (options.clone() if options is not None else poptorch.Options())
    opts.setExecutionStrategy(strategy).deviceIterations(device_iterations)
    opts.Training.gradientAccumulation(accumulation)
    samples = micro_batch * accumulation * device_iterations * opts.replication_factor
    return plan_on_meta(model, opts, poptorch.optim.AdamW(model.parameters()),
                        torch.empty(samples, 1, 28, 28, device="meta"),
                        torch.empty(samples, dtype=torch.long, device="meta"))
