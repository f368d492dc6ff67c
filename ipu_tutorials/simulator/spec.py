"""The run spec: one frozen record of what the simulator is asked to build and run.

The facade translates poptorch.Options and the optimizer into a RunSpec once, at compile;
capture, placement, memory, costs, schedule, runtime and the report all read the same one.
Counts keep the user's names: `gradient_accumulation` is opts.Training.gradientAccumulation,
`device_iterations` is opts.deviceIterations, `replication_factor` is opts.replicationFactor.
"""
from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping

from .half import Rounding
from .hardware import System

OUTPUT_ALL, OUTPUT_FINAL, OUTPUT_SUM, OUTPUT_EVERY_N = "all", "final", "sum", "every_n"
# float16 inputs meeting float32 weights: PopTorch 3's dispatcher types each op (mixed_types.py);
# SDK 2.x's tracing frontend (halfFloatCasting's FloatDowncastToHalf) ran the ops in float16
MIXED_DOWNCAST, MIXED_DISPATCHER = "downcast", "dispatcher"


class StrategyKind(str, enum.Enum):
    """The execution strategy's family; each has its own placement rules and schedule."""

    PIPELINED = "pipelined"
    SHARDED = "sharded"
    SERIAL_PHASED = "serial_phased"
    PARALLEL_PHASED = "parallel_phased"

    @property
    def phased(self) -> bool:
        return self in (StrategyKind.SERIAL_PHASED, StrategyKind.PARALLEL_PHASED)

    def __str__(self) -> str:  # reports and messages show "pipelined", as they always have
        return self.value

    __format__ = str.__format__


class AutoRule(str, enum.Enum):
    """How blocks become stages when the strategy lists none (poptorch.AutoStage)."""

    SAME_AS_IPU = "same_as_ipu"
    AUTO_INCREMENT = "auto_increment"


@dataclasses.dataclass(frozen=True)
class StageSpec:
    blocks: tuple[str, ...]
    ipu: int | None = None


@dataclasses.dataclass(frozen=True)
class StrategySpec:
    """An execution strategy as data: explicit stages, phases, or an automatic rule."""

    kind: StrategyKind = StrategyKind.PIPELINED
    auto: AutoRule = AutoRule.SAME_AS_IPU  # used when stages and phases are None
    stages: tuple[StageSpec, ...] | None = None
    phases: tuple[tuple[StageSpec, ...], ...] | None = None
    separate_backward_phase: bool = False
    liveness: int = 0  # poptorch.Liveness's value (phases.py): 0 AlwaysLive ... 3 OffChipAfterEachPhase
    text: str = "PipelinedExecution(AutoStage.SameAsIpu)"  # the user's spelling, for messages


@dataclasses.dataclass(frozen=True)
class OptimizerSpec:
    """How much state an optimizer keeps and how much arithmetic its update costs."""

    name: str = "SGD"
    state_per_param: int = 0  # tensors of optimizer state per weight (momentum, variance, ...)
    state_bytes: int = 4  # width of those tensors
    accum_bytes: int | None = None  # gradient accumulator width (None: the weight's width)
    flops_per_param: int = 2  # arithmetic of one update, per weight element
    # the loss is multiplied by it before backward and the gradients divided by it after: the
    # optimizer's loss_scaling as the device took it (wrap or setOptimizer; 1 for torch.optim)
    loss_scaling: float = 1.0


@dataclasses.dataclass(frozen=True)
class Location:
    """Where one kind of tensor lives (TensorLocationSettings as data)."""

    on_chip: bool = True
    replicated_sharding: bool = False
    min_elements_off_chip: int = 0
    min_elements_sharding: int = 0  # smaller tensors are not split across replicas


@dataclasses.dataclass(frozen=True)
class RunSpec:
    """Everything downstream of the facade needs to know about a wrapped model's runs.

    The numerics (runtime) run this process's R replicas; the plan (placement, memory, costs,
    schedule) sees the pod_replicas of every instance.

    Legend of a call: D device_iterations, A gradient_accumulation, R replication_factor,
    G input groups (R / input_group_size), mb micro_batch. A call's input holds D x A x G
    micro-batches of mb samples.
    """

    training: bool
    micro_batch: int = 1
    device_iterations: int = 1
    gradient_accumulation: int = 1
    replication_factor: int = 1  # replicas this host process drives
    instances: int = 1  # host processes (poprun instances), each driving replication_factor
    instance: int = 0  # this host process's index among them
    input_group_size: int = 1  # replicas that share one slice of the input
    orthogonal_groups: bool = False  # replicas r, r+G, r+2G... share (else consecutive ones do)
    output_mode: str = OUTPUT_FINAL
    output_return_period: int = 1
    mixed_precision: str | None = None  # MIXED_DOWNCAST, MIXED_DISPATCHER or None
    mean_reduction: bool = True  # ReductionType.Mean (else Sum) over micro-batches and replicas
    running_mean: bool = False  # MeanReductionStrategy.Running (else Post)
    strategy: StrategySpec = StrategySpec()
    optimizer: OptimizerSpec = OptimizerSpec()
    locations: Mapping[str, Location] = dataclasses.field(default_factory=dict)
    available_memory: Mapping[int, float] = dataclasses.field(default_factory=dict)  # by IPU
    partials_bytes: int = 4
    rounding: Rounding = Rounding()  # how float16 results round (half.py)
    floating_point_exceptions: bool = False  # stop at the first inf/NaN (fp_exceptions.py)
    auto_round_num_ipus: bool = False
    # opts._Popart.set("autoRecomputation", n): PopART's RecomputationType (0 None, 1 Standard,
    # 2 NormOnly, 3 Pipeline, 4 RecomputeAll), None when unset (then pipelines recompute and
    # everything else keeps its activations)
    recompute: int | None = None
    loader_async: bool = True  # host data prepared while the device runs (DataLoaderMode.Async)
    synthetic_data: bool = False  # data made on the device: nothing crosses the host link
    wait_for_ipu: bool = False  # POPTORCH_WAIT_FOR_IPU=1
    system: System = System()

    def location(self, kind: str) -> Location:
        return self.locations.get(kind, Location())

    @property
    def pod_replicas(self) -> int:
        """Replicas of the whole run, every instance's: what the IPUs and the all-reduce see."""
        return self.replication_factor * self.instances

    @property
    def input_groups(self) -> int:
        return self.replication_factor // self.input_group_size

    @property
    def micro_batches_per_input(self) -> int:
        """Micro-batches each call's input holds: D x A x G."""
        return self.device_iterations * self.gradient_accumulation * self.input_groups

    @property
    def samples_per_call(self) -> int:
        """Samples every instance's replicas process in one call: mb x D x A x R x instances."""
        return (self.micro_batch * self.device_iterations * self.gradient_accumulation
                * self.pod_replicas)

    def group_of(self, replica: int) -> int:
        """The input group whose slice of the input `replica` reads."""
        if self.orthogonal_groups:
            return replica % self.input_groups
        return replica // self.input_group_size

    def describe_factor(self) -> str:
        groups = ("" if self.input_group_size == 1 else
                  f" / input group size {self.input_group_size}")
        return (f"deviceIterations ({self.device_iterations}) x gradientAccumulation "
                f"({self.gradient_accumulation}) x replicationFactor "
                f"({self.replication_factor}){groups} = {self.micro_batches_per_input}")
