"""Checks a wrapped model's options and optimizer once, up front, with errors that say the fix."""
from __future__ import annotations

import torch

from ..errors import Error
from ._checks import check_finite_hyperparameters
from ._device_optimizer import DeviceOptimizer, same_family
from ._popart_names import POPART_OPTION_NAMES
from .enums import MeanReductionStrategy, OutputMode
from .options import Options
from .strategies import PipelinedExecution


def check_run_options(opts: Options, training: bool) -> None:
    """The batching options must fit together and fit the kind of model."""
    if not training and opts.Training.gradient_accumulation != 1:
        pipelined = type(opts._value("execution_strategy")) is PipelinedExecution  # not Sharded
        raise Error("You must set poptorch.Options().Training.gradientAccumulation to 1 or leave "
                    "it as its default value (1) when running a poptorch.inferenceModel()."
                    + (" Use poptorch.Options().deviceIterations to process a sufficient "
                       "number of batches each run for pipelined execution instead."
                       if pipelined else "")
                    + f" (An inferenceModel has no gradients to accumulate; it is "
                      f"{opts.Training.gradient_accumulation}.)")
    every_n = opts._value("output_mode") == OutputMode.EveryN
    if every_n and opts.device_iterations % opts.output_return_period:
        raise Error(f"OutputMode.EveryN returns every {opts.output_return_period}th device "
                    f"iteration, so deviceIterations ({opts.device_iterations}) must be a "
                    f"multiple of it")
    if opts.replication_factor % opts.input_group_size:
        raise Error(f"inputReplicaGrouping's group size ({opts.input_group_size}) must divide "
                    f"the replication factor ({opts.replication_factor}); set the grouping "
                    f"again after changing replicationFactor")


def check_optimizer(model: torch.nn.Module, optimizer) -> None:
    """The optimizer must be over this model's parameters (DeviceOptimizer checks its type)."""
    owned = {id(p) for p in model.parameters()}
    if any(id(p) not in owned for g in optimizer.param_groups for p in g["params"]):
        raise ValueError("the optimizer holds parameters that are not in the wrapped "
                         "model; build it from this model's parameters")
    check_finite_hyperparameters(type(optimizer).__name__, optimizer.param_groups)


def float16_accumulators(optimizer) -> bool:
    """float16 accumulators use running means, except the combined SGD accumulator (Post)."""
    return (getattr(optimizer, "accum_type", None) == torch.float16
            and not getattr(optimizer, "use_combined_accum", False))


def settle_reduction(opts: Options, optimizer) -> None:
    """PopTorch switches to running means so that float16 accumulators cannot overflow."""
    if float16_accumulators(optimizer):
        opts.Training.setMeanAccumulationAndReplicationReductionStrategy(
            MeanReductionStrategy.Running)


def check_new_optimizer(opts: Options, model: torch.nn.Module, compiled: DeviceOptimizer | None,
                        new) -> DeviceOptimizer:
    """setOptimizer's rules: this model's parameters; once compiled, the same kind of optimizer
    (poptorch.optim's or torch.optim's twin) and unchanged constants; a reduction that holds.

    Args:
        compiled: the optimizer the executable holds, None before compile.

    Returns:
        The new optimizer as the device will hold it.
    """
    check_optimizer(model, new)
    device = DeviceOptimizer(new)
    if compiled is not None and not same_family(device.kind, compiled.kind):
        raise TypeError(f"setOptimizer() expects an optimizer of the kind the model was "
                        f"compiled with ({compiled.kind.__name__}), got "
                        f"{type(new).__name__}: wrap the model again to change kind")
    if compiled is not None:
        compiled.check_constants(new)
    running = (opts.Training.meanAccumulationAndReplicationReductionStrategy
               == MeanReductionStrategy.Running)
    if float16_accumulators(new) and not running:
        raise ValueError("Invalid optimizer: the new optimizer would require changing "
                         "options.Training.meanAccumulationAndReplicationReductionStrategy "
                         "to poptorch.MeanReductionStrategy.Running but the executable is "
                         "already compiled (float16 accumulators need running means): wrap "
                         "the model again with the new optimizer instead")
    return device


def check_popart_options(opts: Options) -> None:
    """Each opts._Popart.set() name must be a PopART session option, checked when the model
    compiles, in PopTorch's words (popart_compiler SessionOptionsImpl.hpp: "Unknown <type> option
    <name>", the type named after the value's)."""
    for key, value in opts._Popart.options.items():
        if key not in POPART_OPTION_NAMES:
            kind = {bool: "bool", int: "uint64", float: "double", str: "string"}.get(
                type(value), "container")
            raise Error(f"Unknown {kind} option {key}: not a PopART session option. The ones "
                        f"ipu_tutorials records are: {', '.join(sorted(POPART_OPTION_NAMES))}")


def updatable_buffers(opts: Options) -> list[str] | None:
    """The buffer names opts.updatableNamedBuffers() gave, or None when it was not called."""
    return opts._Popart.options.get("updatableNamedBuffers")


def check_updatable_buffers(opts: Options, model: torch.nn.Module) -> None:
    """Each name given to updatableNamedBuffers() must be a buffer of the model (checked when
    the model compiles, as PopTorch does)."""
    known = dict(model.named_buffers())
    for name in updatable_buffers(opts) or []:
        if name not in known:
            raise Error(f"updatableNamedBuffers: {name!r} is not a buffer of the model; its "
                        f"buffers are: {', '.join(known) or 'none'}")
