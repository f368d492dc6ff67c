"""Checks a wrapped model's options and optimizer once, up front, with errors that say the fix."""
from __future__ import annotations

import torch

from ..errors import Error
from .enums import MeanReductionStrategy, OutputMode
from .options import Options


def check_run_options(opts: Options, training: bool) -> None:
    """The batching options must fit together and fit the kind of model."""
    if not training and opts.Training.gradient_accumulation != 1:
        raise Error(f"an inferenceModel has no gradients to accumulate: set "
                    f"opts.Training.gradientAccumulation(1) (it is "
                    f"{opts.Training.gradient_accumulation}); pipelined inference fills the "
                    f"pipeline with deviceIterations instead")
    if opts.output_mode == OutputMode.EveryN and opts.device_iterations % opts.output_return_period:
        raise Error(f"OutputMode.EveryN returns every {opts.output_return_period}th device "
                    f"iteration, so deviceIterations ({opts.device_iterations}) must be a "
                    f"multiple of it")
    if opts.replication_factor % opts.input_group_size:
        raise Error(f"inputReplicaGrouping's group size ({opts.input_group_size}) must divide "
                    f"the replication factor ({opts.replication_factor}); set the grouping "
                    f"again after changing replicationFactor")


def check_optimizer(model: torch.nn.Module, optimizer) -> None:
    """The optimizer must be one PopTorch supports, over this model's parameters."""
    if any(g.get("nesterov") for g in optimizer.param_groups):
        raise ValueError("Nesterov momentum is not supported by PopTorch's SGD; use "
                         "nesterov=False")
    owned = {id(p) for p in model.parameters()}
    if any(id(p) not in owned for g in optimizer.param_groups for p in g["params"]):
        raise ValueError("the optimizer holds parameters that are not in the wrapped "
                         "model; build it from this model's parameters")


def float16_accumulators(optimizer) -> bool:
    return getattr(optimizer, "accum_type", None) == torch.float16


def settle_reduction(opts: Options, optimizer) -> None:
    """PopTorch switches to running means so that float16 accumulators cannot overflow."""
    if float16_accumulators(optimizer):
        opts.Training.setMeanAccumulationAndReplicationReductionStrategy(
            MeanReductionStrategy.Running)


def check_new_optimizer(opts: Options, model: torch.nn.Module, old, new) -> None:
    """setOptimizer's rules: same type, this model's parameters, a reduction that still holds."""
    if type(new) is not type(old):
        raise TypeError(f"setOptimizer() expects a {type(old).__name__} like the "
                        f"one the model was compiled with, got {type(new).__name__}")
    check_optimizer(model, new)
    running = (opts.Training.meanAccumulationAndReplicationReductionStrategy
               == MeanReductionStrategy.Running)
    if float16_accumulators(new) and not running:
        raise ValueError("float16 accumulators need MeanReductionStrategy.Running, but this "
                         "model was compiled with Post: wrap the model again with the new "
                         "optimizer instead")
