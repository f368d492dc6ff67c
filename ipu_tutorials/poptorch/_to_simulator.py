"""The facade's one door to the simulator: Options and optimizers in; a RunSpec, plans and runs out.

No other poptorch module imports ipu_tutorials.simulator. `run_spec` is the single
translation of Options into the simulator's terms, made once per compile.
"""
from __future__ import annotations

import contextlib
import dataclasses
import warnings
from typing import TYPE_CHECKING, Callable

import torch
from torch.utils._pytree import tree_flatten, tree_map

from ..simulator import spec as sim
from ..simulator import tracing
from ..simulator.capture import Graph, capture
from ..simulator.compile import Plan, compile_plan
from ..simulator.frozen_values import frozen_warning
from ..simulator.half import Rounding
from ..simulator.hardware import CHOICE, System, ipu_spec
from ..simulator.losses import LossLocator, verify_loss
from ..simulator.mixed_types import MixedTypes
from ..simulator.optimizer import DeviceOptimizer
from ..simulator.replica_state import ReplicaState
from ..simulator.runtime import micro_batch_size, run_inference, run_training
from ..simulator.spec import OUTPUT_EVERY_N, OUTPUT_FINAL, OUTPUT_SUM
from ..support.environment import Environment
from ._option_rules import resolved_output_mode
from .enums import AutoStage, HalfFloatCastingBehavior, OutputMode
from .strategies import (ParallelPhasedExecution, PipelinedExecution, SerialPhasedExecution,
                         ShardedExecution)
from .tensor_locations import TENSOR_KINDS

if TYPE_CHECKING:
    from .options import Options

__all__ = ["DeviceOptimizer", "Graph", "OUTPUT_EVERY_N", "OUTPUT_FINAL", "OUTPUT_SUM", "Plan",
           "compile_model", "declared_spec", "options_spec", "replan", "replica_state", "run",
           "run_spec", "tracing"]

OUTPUT_NAMES = {OutputMode.All: sim.OUTPUT_ALL, OutputMode.Final: sim.OUTPUT_FINAL,
                OutputMode.Sum: sim.OUTPUT_SUM, OutputMode.EveryN: sim.OUTPUT_EVERY_N}
STRATEGY_KINDS = {PipelinedExecution: sim.StrategyKind.PIPELINED,
                  ShardedExecution: sim.StrategyKind.SHARDED,
                  SerialPhasedExecution: sim.StrategyKind.SERIAL_PHASED,
                  ParallelPhasedExecution: sim.StrategyKind.PARALLEL_PHASED}
PREPARED_AHEAD = "_ipu_tutorials_prepared_ahead"  # tensor attribute set by poptorch.DataLoader


# --- Options -> RunSpec ---------------------------------------------------------------------
def _stage_specs(stages) -> tuple[sim.StageSpec, ...]:
    return tuple(sim.StageSpec(tuple(s.blocks), s._ipu) for s in stages)


def strategy_spec(strategy) -> sim.StrategySpec:
    """The strategy as the simulator reads it (from the fields PopTorch keeps private)."""
    kind = STRATEGY_KINDS[type(strategy)]
    if kind.phased:
        phases = tuple(_stage_specs(p.stages) for p in strategy._phases)
        return sim.StrategySpec(kind, phases=phases,
                                separate_backward_phase=strategy._separate_backward_phase,
                                liveness=int(strategy._tensors_liveness),
                                text=repr(strategy))
    if strategy._stages is not None:
        return sim.StrategySpec(kind, stages=_stage_specs(strategy._stages), text=repr(strategy))
    auto = (sim.AutoRule.AUTO_INCREMENT if strategy._auto_stage == AutoStage.AutoIncrement
            else sim.AutoRule.SAME_AS_IPU)
    return sim.StrategySpec(kind, auto=auto, text=repr(strategy))


def locations(options: Options, phased: bool) -> dict[str, sim.Location]:
    """Each tensor kind's location, as its TensorLocationSettings' declarations map it;
    phased execution puts what the user left unset off chip."""
    return {kind: sim.Location(**{"on_chip": not phased,
                                  **options.TensorLocations._settings(kind)._spec_fields()})
            for kind in TENSOR_KINDS}


def _width(dtype) -> int:
    return torch.empty(0, dtype=dtype).element_size()


def optimizer_spec(optimizer, loss_scaling: float = 1.0) -> sim.OptimizerSpec:
    """State size, update cost and loss scale (the value the device took, which the caller
    gives: the optimizer's own may have changed since); plain torch optimizers are sized like
    their PopTorch twins."""
    if optimizer is None:
        return sim.OptimizerSpec()
    name = type(optimizer).__name__
    if isinstance(optimizer, DeviceOptimizer):
        return sim.OptimizerSpec(name, optimizer._state_per_param, optimizer._state_bytes,
                                 optimizer._accumulator_type and _width(optimizer._accumulator_type),
                                 optimizer._flops_per_param, float(loss_scaling))
    group = optimizer.param_groups[0]
    state = {"SGD": 1 if group.get("momentum") else 0, "RMSprop": 1}.get(name, 2)
    return sim.OptimizerSpec(name, state, 4, None, 12 if state == 2 else 4)


def system_for(options: Options, env: Environment) -> System:
    """The machine set_system() chose (else the environment's); useOfflineIpuTarget's chip."""
    system = CHOICE.current(env.ipu_version, env.num_ipus)
    if options._value("ipu_version") is not None:
        system = dataclasses.replace(system, ipu=ipu_spec(options._value("ipu_version")))
    return system


def output_mode(options: Options, training: bool) -> str:
    """The output mode's name; Default means Final for training and All for inference."""
    return OUTPUT_NAMES[resolved_output_mode(options._value("output_mode"), training)]


def mixed_precision(options: Options, model: torch.nn.Module, inputs: list) -> str | None:
    """How float16 inputs meet float32 weights: PopTorch 3.0+ types each op as its dispatcher
    does (simulator/mixed_types.py); only the deprecated halfFloatCasting(FloatDowncastToHalf),
    the SDK 2.x default, runs the ops in float16."""
    halves = any(isinstance(t, torch.Tensor) and t.dtype == torch.float16 for t in inputs)
    if not halves or not any(p.dtype == torch.float32 for p in model.parameters()):
        return None
    casting = options.Precision._value("half_float_casting")
    downcast = casting == HalfFloatCastingBehavior.FloatDowncastToHalf
    return sim.MIXED_DOWNCAST if downcast else sim.MIXED_DISPATCHER


def rounding(options: Options) -> Rounding:
    """How the simulator rounds float16 results: partials type, stochastic rounding, seed."""
    precision = options.Precision
    return Rounding(half_partials=precision._value("partials_type") == torch.float16,
                    stochastic=precision._value("enable_stochastic_rounding"),
                    seed=options._value("random_seed") or 0, owner=options)


def _tensors(args: tuple, kwargs: dict) -> list[torch.Tensor]:
    return [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]


def declared_spec(options: Options, training: bool = True) -> sim.RunSpec:
    """The RunSpec fields the options' declarations fill, one each (`Option(spec=...)`:
    device_iterations, gradient_accumulation, replication_factor, instances, ...); the
    fields that depend on several options, the model or the machine keep their defaults."""
    return sim.RunSpec(training=training, **options._spec_fields())


def options_spec(options: Options, training: bool, optimizer, env: Environment,
                 mixed: str | None = None, micro_batch: int = 1,
                 loss_scaling: float = 1.0) -> sim.RunSpec:
    """Options (and the optimizer, with the loss scale the device took) in the simulator's
    terms, for a known micro-batch: the declared fields, then the ones built from several
    options, the model or the machine."""
    strategy = strategy_spec(options._value("execution_strategy"))
    return dataclasses.replace(
        declared_spec(options, training), micro_batch=micro_batch,
        output_mode=output_mode(options, training), mixed_precision=mixed, strategy=strategy,
        optimizer=optimizer_spec(optimizer if training else None, loss_scaling),
        locations=locations(options, strategy.kind.phased), rounding=rounding(options),
        wait_for_ipu=env.wait_for_ipu, system=system_for(options, env))


def run_spec(options: Options, training: bool, optimizer, model: torch.nn.Module,
             args: tuple, kwargs: dict, env: Environment,
             loss_scaling: float = 1.0) -> sim.RunSpec:
    """The one translation of Options the simulator reads, made at compile for these inputs;
    loss_scaling is the optimizer's as the model was wrapped (or setOptimizer gave it).

    Raises:
        Error: the inputs' leading dimension does not divide into the call's micro-batches.
    """
    inputs = _tensors(args, kwargs)
    spec = options_spec(options, training, optimizer, env,
                        mixed_precision(options, model, inputs), loss_scaling=loss_scaling)
    # the counts fix how many micro-batches a call holds; the inputs then fix their size
    return dataclasses.replace(spec, micro_batch=micro_batch_size(inputs, spec),
                               loader_async=prepared_ahead(inputs))


def prepared_ahead(inputs: list[torch.Tensor]) -> bool:
    """Whether the host prepared these inputs while the device ran (DataLoaderMode.Async,
    AsynchronousDataAccessor or torch workers). Tensors that came from no poptorch loader
    count as prepared ahead, as the plan has always assumed."""
    return all(getattr(t, PREPARED_AHEAD, True) for t in inputs)


# --- plans and runs --------------------------------------------------------------------------
def _first_micro_batch(spec: sim.RunSpec, args: tuple, kwargs: dict):
    """What capture runs: the first micro-batch, as the device would see it."""
    micro = spec.micro_batch
    return tree_map(lambda x: x[:micro] if isinstance(x, torch.Tensor) and x.dim() else x,
                    (args, kwargs))


def compile_model(model: torch.nn.Module, spec: sim.RunSpec, args: tuple, kwargs: dict,
                  progress: Callable[[int], None]) -> tuple[sim.RunSpec, Graph, Plan]:
    """Capture the model on one micro-batch, check its loss when training, and plan it.

    The spec comes back with mixed_precision set when forward mixes float16 and float32
    where PopTorch's typing rules act (a float16 cast inside forward meeting float32 weights).

    Raises:
        Error: a loss, placement or batching rule is broken.
        OutOfMemoryError: the plan does not fit.
    """
    first_args, first_kwargs = _first_micro_batch(spec, args, kwargs)
    downcast = spec.mixed_precision == sim.MIXED_DOWNCAST
    typing = contextlib.nullcontext() if downcast else MixedTypes()
    with typing:
        graph = capture(model, first_args, first_kwargs,
                        compute_dtype=torch.float16 if downcast else None)
    if not downcast and typing.used:
        spec = dataclasses.replace(spec, mixed_precision=sim.MIXED_DISPATCHER)
    if graph.value_reads:  # PopTorch freezes them silently; a learner should know
        warnings.warn(frozen_warning(graph.value_reads), stacklevel=4)
    progress(20)
    if spec.training:
        verify_loss(graph)
    return spec, graph, compile_plan(graph, spec, progress=progress)


def replan(graph: Graph, spec: sim.RunSpec, optimizer,
           loss_scaling: float = 1.0) -> tuple[sim.RunSpec, Plan]:
    """The spec and plan of the same graph with another optimizer (setOptimizer) and the
    loss scale the device takes from it."""
    spec = dataclasses.replace(spec, optimizer=optimizer_spec(optimizer, loss_scaling))
    return spec, compile_plan(graph, spec)


def replica_state(model: torch.nn.Module, replication_factor: int,
                  broadcast_buffers: bool) -> ReplicaState:
    """Each replica's buffers, starting from the weights uploaded with the executable."""
    return ReplicaState(model, replication_factor, broadcast_buffers)


def run(model: torch.nn.Module, spec: sim.RunSpec, args: tuple, kwargs: dict, optimizer=None,
        loss: LossLocator | None = None, on_update=None, across_instances=None,
        replicas: ReplicaState | None = None, frozen: tuple = (), loss_scale=None):
    """One call's numerics: D x A x R micro-batches, with the weight updates when training.

    optimizer is the optimizer as the device holds it (_device_optimizer's view, not the
    user's object); across_instances, when several host processes share the run, reduces
    each update's gradients over every instance's replicas (see _instances.gradient_reducer);
    replicas gives each replica its own buffers (broadcastBuffers(False)); frozen replays the
    tensor values forward read at trace time (Graph.value_reads); loss_scale, when automatic
    loss scaling moves the scale, gives each step's (else the spec's is used).
    """
    if spec.training:
        return run_training(model, optimizer, args, kwargs, spec, loss, on_update,
                            across_instances, replicas, frozen, loss_scale)
    return run_inference(model, args, kwargs, spec, replicas, frozen)
