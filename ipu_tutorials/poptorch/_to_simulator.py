"""Translate Options, strategies and optimizers into the simulator's plain data."""
from __future__ import annotations

import dataclasses

import torch

from ..simulator import config as sim
from ..simulator.hardware import default_system, ipu_spec
from ..simulator.runtime import MIXED_DOWNCAST, MIXED_UPCAST, Batching
from .enums import AutoStage, CommGroupType, HalfFloatCastingBehavior, OutputMode
from .options import Options
from .strategies import (ParallelPhasedExecution, PipelinedExecution, SerialPhasedExecution,
                         ShardedExecution)

OUTPUT_NAMES = {OutputMode.All: sim.OUTPUT_ALL, OutputMode.Final: sim.OUTPUT_FINAL,
                OutputMode.Sum: sim.OUTPUT_SUM, OutputMode.EveryN: sim.OUTPUT_EVERY_N}


def _stage_specs(stages) -> list[sim.StageSpec]:
    return [sim.StageSpec(list(s.blocks), s.ipu_id) for s in stages]


def strategy_spec(strategy) -> sim.StrategySpec:
    kind = {PipelinedExecution: sim.PIPELINED, ShardedExecution: sim.SHARDED,
            SerialPhasedExecution: sim.SERIAL_PHASED,
            ParallelPhasedExecution: sim.PARALLEL_PHASED}[type(strategy)]
    spec = sim.StrategySpec(kind=kind, text=repr(strategy))
    if kind in (sim.SERIAL_PHASED, sim.PARALLEL_PHASED):
        spec.phases = [_stage_specs(p.stages) for p in strategy.phases]
        spec.separate_backward_phase = strategy.separate_backward_phase
    elif strategy.stages is not None:
        spec.stages = _stage_specs(strategy.stages)
    else:
        spec.auto = sim.AUTO_INCREMENT if strategy.auto_stage == AutoStage.AutoIncrement \
            else sim.SAME_AS_IPU
    return spec


def locations(options: Options, phased: bool) -> dict[str, sim.Location]:
    """Each tensor kind's location; phased execution puts the ones the user left unset off chip."""
    result = {}
    for kind in ("activation", "weight", "optimizer", "accumulator"):
        settings = options.TensorLocations.location(kind)
        on_chip = bool(settings.get("onChip", 0 if phased else 1))
        result[kind] = sim.Location(on_chip=on_chip,
                                    replicated_sharding=bool(settings.get("useReplicatedTensorSharding", 0)),
                                    min_elements_off_chip=settings.get("minElementsForOffChip", 0),
                                    min_elements_sharding=settings.get(
                                        "minElementsForReplicatedTensorSharding", 0))
    return result


def _width(dtype) -> int:
    return torch.empty(0, dtype=dtype).element_size()


def optimizer_spec(optimizer) -> sim.OptimizerSpec:
    """State size and update cost; plain torch optimizers are sized like their PopTorch twins."""
    if optimizer is None:
        return sim.OptimizerSpec()
    name = type(optimizer).__name__
    if hasattr(optimizer, "state_per_param"):
        return sim.OptimizerSpec(name, optimizer.state_per_param, optimizer.state_bytes,
                                 _width(optimizer.accum_type), optimizer.flops_per_param)
    group = optimizer.param_groups[0]
    state = {"SGD": 1 if group.get("momentum") else 0, "RMSprop": 1}.get(name, 2)
    return sim.OptimizerSpec(name, state, 4, None, 12 if state == 2 else 4)


def system_for(options: Options):
    system = default_system()
    if options.ipu_version is not None:
        system = dataclasses.replace(system, ipu=ipu_spec(options.ipu_version))
    return system


def run_config(options: Options, training: bool, micro_batch: int, optimizer) -> sim.RunConfig:
    strategy = strategy_spec(options.execution_strategy)
    phased = strategy.kind in (sim.SERIAL_PHASED, sim.PARALLEL_PHASED)
    return sim.RunConfig(
        training=training, micro_batch=micro_batch,
        device_iterations=options.device_iterations, replicas=options.replication_factor,
        accumulation=options.Training.gradient_accumulation, strategy=strategy,
        optimizer=optimizer_spec(optimizer) if training else sim.OptimizerSpec(),
        locations=locations(options, phased),
        available_memory={int(k[3:]): v for k, v in options.available_memory_proportion.items()},
        partials_bytes=_width(options.Precision.partials_type),
        output_mode=output_mode(options, training), output_period=options.output_return_period,
        auto_round_num_ipus=options.auto_round_num_ipus, system=system_for(options),
        host_instances=options.Distributed.numProcesses,
        # PopART's RecomputationType: 0 NoRecompute, 1 Standard, 3 Pipeline, 4 RecomputeAll
        recompute=bool(int(options._Popart._values.get("autoRecomputation", 0))))


def output_mode(options: Options, training: bool) -> str:
    """The output mode's name; Default means Final for training and All for inference."""
    if options.output_mode == OutputMode.Default:
        return sim.OUTPUT_FINAL if training else sim.OUTPUT_ALL
    return OUTPUT_NAMES[options.output_mode]


def mixed_precision(options: Options, model: torch.nn.Module, inputs: list) -> str | None:
    """How float16 inputs meet float32 weights: PopTorch casts the weights down by default
    (the ops run in float16, the weights stay float32); HalfUpcastToFloat casts inputs up."""
    halves = any(isinstance(t, torch.Tensor) and t.dtype == torch.float16 for t in inputs)
    if not halves or not any(p.dtype == torch.float32 for p in model.parameters()):
        return None
    upcast = options.Precision.half_float_casting == HalfFloatCastingBehavior.HalfUpcastToFloat
    return MIXED_UPCAST if upcast else MIXED_DOWNCAST


def batching(options: Options, micro_batch: int, mixed: str | None = None) -> Batching:
    return Batching(micro_batch=micro_batch, device_iterations=options.device_iterations,
                    mixed=mixed,
                    accumulation=options.Training.gradient_accumulation,
                    replicas=options.replication_factor,
                    input_group_size=options.input_group_size,
                    orthogonal_groups=options.input_group_type == CommGroupType.Orthogonal,
                    output_mode=OUTPUT_NAMES[options.output_mode],  # the executor resolved Default
                    output_period=options.output_return_period)
