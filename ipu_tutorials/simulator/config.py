"""What the simulator is asked to build: the facade turns Options and optimizers into these."""
from __future__ import annotations

import dataclasses

from .hardware import System

PIPELINED, SHARDED, SERIAL_PHASED, PARALLEL_PHASED = (
    "pipelined", "sharded", "serial_phased", "parallel_phased")
SAME_AS_IPU, AUTO_INCREMENT = "same_as_ipu", "auto_increment"
OUTPUT_ALL, OUTPUT_FINAL, OUTPUT_SUM, OUTPUT_EVERY_N = "all", "final", "sum", "every_n"


@dataclasses.dataclass
class StageSpec:
    blocks: list[str]
    ipu: int | None = None


@dataclasses.dataclass
class StrategySpec:
    """An execution strategy as data: explicit stages, phases, or an automatic rule."""

    kind: str = PIPELINED
    auto: str = SAME_AS_IPU  # used when stages and phases are None
    stages: list[StageSpec] | None = None
    phases: list[list[StageSpec]] | None = None
    separate_backward_phase: bool = False
    text: str = "PipelinedExecution(AutoStage.SameAsIpu)"  # the user's spelling, for messages


@dataclasses.dataclass
class OptimizerSpec:
    """How much state an optimizer keeps and how much arithmetic its update costs."""

    name: str = "SGD"
    state_per_param: int = 0  # tensors of optimizer state per weight (momentum, variance, ...)
    state_bytes: int = 4  # width of those tensors
    accum_bytes: int | None = None  # gradient accumulator width (None: the weight's width)
    flops_per_param: int = 2  # arithmetic of one update, per weight element


@dataclasses.dataclass
class Location:
    """Where one kind of tensor lives (TensorLocationSettings as data)."""

    on_chip: bool = True
    replicated_sharding: bool = False
    min_elements_off_chip: int = 0
    min_elements_sharding: int = 0  # smaller tensors are not split across replicas


@dataclasses.dataclass
class RunConfig:
    training: bool
    micro_batch: int = 1
    device_iterations: int = 1
    replicas: int = 1
    accumulation: int = 1
    strategy: StrategySpec = dataclasses.field(default_factory=StrategySpec)
    optimizer: OptimizerSpec = dataclasses.field(default_factory=OptimizerSpec)
    locations: dict[str, Location] = dataclasses.field(default_factory=dict)
    available_memory: dict[int, float] = dataclasses.field(default_factory=dict)  # by IPU
    partials_bytes: int = 4
    output_mode: str = OUTPUT_FINAL
    output_period: int = 1
    auto_round_num_ipus: bool = False
    recompute: bool = False  # autoRecomputation set: recompute activations without pipelining
    host_instances: int = 1  # host processes preparing data (poprun --num-instances)
    loader_async: bool = True  # data prepared while the device runs (DataLoaderMode.Async)
    system: System = dataclasses.field(default_factory=System)

    def location(self, kind: str) -> Location:
        return self.locations.get(kind, Location())

    @property
    def samples_per_call(self) -> int:
        return self.micro_batch * self.device_iterations * self.replicas * self.accumulation
