"""Stages, phases and the four multi-IPU execution strategies (descriptions only; compile checks them)."""
from __future__ import annotations

from ._checks import check_bool, check_enum, check_int
from .enums import AutoStage, Liveness


def _check_block_id(where: str, block_id) -> str:
    """A block id as plans name it: a string, or an int as the string of its digits."""
    if isinstance(block_id, bool) or not isinstance(block_id, (str, int)):
        raise TypeError(f"{where}: block ids are strings or ints (the user_id given to "
                        f"poptorch.Block or BeginBlock), got {type(block_id).__name__} "
                        f"{block_id!r}")
    return str(block_id)


class Stage:
    """One or more blocks that run on one IPU: `Stage("B1", "B2").ipu(0)`."""

    def __init__(self, *block_ids: str):
        if not block_ids:
            raise ValueError("poptorch.Stage needs at least one block id, e.g. Stage(\"B1\")")
        self.blocks = [_check_block_id("poptorch.Stage", b) for b in block_ids]
        self._ipu: int | None = None

    def ipu(self, ipu_id: int) -> "Stage":
        """Run this stage on IPU `ipu_id` (a non-negative int), as PopTorch's `Stage.ipu`.

        Returns:
            This Stage, so that `Stage("B1").ipu(0)` reads as one expression.
        """
        self._ipu = check_int("Stage.ipu()", ipu_id, minimum=0)
        return self

    @property
    def ipu_id(self) -> int | None:
        """(Simulator) the IPU `ipu()` chose, or None: the stage then runs on its blocks'
        `ipu_id`."""
        return self._ipu

    def __repr__(self) -> str:
        names = ", ".join(f'"{b}"' for b in self.blocks)
        return f"Stage({names})" + ("" if self._ipu is None else f".ipu({self._ipu})")


def _as_stage(where: str, item) -> Stage:
    """A Stage, one block id, or a list of block ids (one Stage made of those blocks)."""
    if isinstance(item, Stage):
        return item
    if isinstance(item, (list, tuple)):
        return Stage(*[_check_block_id(where, b) for b in item])
    return Stage(_check_block_id(where, item))


class _StagedExecution:
    """Shared by PipelinedExecution and ShardedExecution: explicit stages or an AutoStage rule."""

    def __init__(self, *args):
        name = type(self).__name__
        self.auto_stage = AutoStage.SameAsIpu
        self.stages: list[Stage] | None = None
        if len(args) == 1 and isinstance(args[0], AutoStage):
            self.auto_stage = args[0]
        elif args:
            if any(isinstance(a, AutoStage) for a in args):
                raise TypeError(f"{name}: pass either one AutoStage or stages/block ids, not both")
            # A stage without .ipu() runs on its blocks' ipu_id, else on the IPU numbered like
            # the stage: plain block ids "B1", "B2", ... land on IPUs 0, 1, ... (placement.py).
            self.stages = [_as_stage(name, a) for a in args]

    def __repr__(self) -> str:
        inner = (", ".join(map(repr, self.stages)) if self.stages is not None
                 else f"AutoStage.{self.auto_stage.name}")
        return f"{type(self).__name__}({inner})"


class PipelinedExecution(_StagedExecution):
    """Stages on different IPUs work on different micro-batches at the same time."""


class ShardedExecution(_StagedExecution):
    """Stages run one after another: one IPU is busy at a time."""


class Phase:
    """Stages that run at the same time on a group of IPUs, in phased execution."""

    def __init__(self, *stages):
        if len(stages) == 1 and isinstance(stages[0], (list, tuple)):
            stages = tuple(stages[0])
        if not stages:
            raise ValueError("poptorch.Phase needs at least one stage or block id")
        if all(isinstance(s, str) for s in stages):
            self.stages = [Stage(*stages)]  # Phase("A", "B"): one Stage made of both blocks
        elif all(isinstance(s, Stage) for s in stages):
            self.stages = list(stages)
        else:
            raise TypeError(f"poptorch.Phase takes either block ids (strings, which form one "
                            f"Stage) or poptorch.Stage objects, all of one kind; got "
                            f"{[type(s).__name__ for s in stages]}")

    def ipus(self, *ipu_ids: int) -> "Phase":
        """Give each of this phase's stages its IPU, in order (PopTorch's `Phase.ipus`).

        Returns:
            This Phase (PopTorch returns None; returning the phase lets a strategy be written
            as one expression).

        Raises:
            ValueError: when the count of IPUs is not the count of stages.
        """
        if len(ipu_ids) != len(self.stages):
            raise ValueError(f"Phase.ipus(): this phase has {len(self.stages)} stage(s) "
                             f"{self.stages} but {len(ipu_ids)} IPU id(s) {list(ipu_ids)} were given; "
                             f"give one IPU per stage")
        for stage, ipu in zip(self.stages, ipu_ids):
            stage.ipu(ipu)
        return self

    @property
    def ipu_ids(self) -> list[int | None]:
        """(Simulator) each stage's IPU, None where none was given."""
        return [s.ipu_id for s in self.stages]

    def __repr__(self) -> str:
        return "Phase(" + ", ".join(map(repr, self.stages)) + ")"


class _PhasedExecution:
    """Phases run one after another; their weights stream in from off-chip memory."""

    def __init__(self, *phases):
        # A single list of Phases (or of lists) is the list of phases; any other list is one phase.
        if len(phases) == 1 and isinstance(phases[0], (list, tuple)) and all(
                isinstance(p, (Phase, list, tuple)) for p in phases[0]):
            phases = tuple(phases[0])
        if not phases:
            raise ValueError(f"{type(self).__name__} needs at least one poptorch.Phase")
        self.phases = [p if isinstance(p, Phase) else Phase(p) for p in phases]
        self.separate_backward_phase = False
        # A stage without .ipu() runs on its blocks' ipu_id; with neither, the simulator picks
        # an IPU at compile and warns, as PopTorch has no default (simulator/placement.py).

    def phase(self, index: int) -> Phase:
        """The phase at `index` (from 0), e.g. to place it: `strategy.phase(0).ipus(0, 1)`.

        Raises:
            IndexError: for an index outside the phases (PopTorch asserts on a negative one).
        """
        if not isinstance(index, int) or not 0 <= index < len(self.phases):
            raise IndexError(f"{type(self).__name__} has phases 0..{len(self.phases) - 1}, "
                             f"not {index!r}")
        return self.phases[index]

    def stage(self, block_id: str) -> Stage:
        """The Stage holding `block_id`, e.g. to move it: `strategy.stage("B1").ipu(0)`."""
        for phase in self.phases:
            for stage in phase.stages:
                if block_id in stage.blocks:
                    return stage
        known = [b for phase in self.phases for stage in phase.stages for b in stage.blocks]
        raise KeyError(f"{type(self).__name__}.stage(): unknown block {block_id!r}; the phases "
                       f"hold {known}")

    def useSeparateBackwardPhase(self, use: bool = True):
        """Give the backward pass phases of its own, as PopTorch does.

        By default the last forward phase and the first backward phase are one phase (with
        3 forward phases, 0, 1, 2 are followed by 2, 3, 4 backward); with `use` True no phase
        is shared (0, 1, 2 are followed by 4, 5, 6). The simulator numbers its phases so
        (`simulator/phases.py`).

        Returns:
            This strategy, so that settings chain.
        """
        self.separate_backward_phase = check_bool("useSeparateBackwardPhase()", use)
        return self

    def __repr__(self) -> str:
        inner = ", ".join(repr(p) if None in p.ipu_ids else
                          f"{p!r}.ipus({', '.join(map(str, p.ipu_ids))})" for p in self.phases)
        return f"{type(self).__name__}({inner})"


class SerialPhasedExecution(_PhasedExecution):
    """All phases on one group of IPUs, one after another."""

    def __init__(self, *phases):
        super().__init__(*phases)
        self.liveness = Liveness.AlwaysLive

    def setTensorsLiveness(self, liveness: Liveness):
        """When streamed tensors leave the chip (poptorch.Liveness); the memory plan and the
        timeline follow it (simulator/phases.py)."""
        self.liveness = check_enum("setTensorsLiveness()", liveness, Liveness)
        return self


class ParallelPhasedExecution(_PhasedExecution):
    """Even phases on even IPUs, odd phases on odd IPUs: one group computes while the other loads."""

    def __init__(self, *phases):
        super().__init__(*phases)
        self.send_tensors_off_chip_after_fwd = False

    def sendTensorsOffChipAfterFwd(self, off_chip: bool = True):
        """Store the forward's activations off chip until the backward (Liveness.OffChipAfterFwd)."""
        self.send_tensors_off_chip_after_fwd = check_bool("sendTensorsOffChipAfterFwd()", off_chip)
        return self

    @property
    def liveness(self) -> Liveness:
        """PopTorch's two choices for parallel phases: AlwaysLive or OffChipAfterFwd."""
        return Liveness.OffChipAfterFwd if self.send_tensors_off_chip_after_fwd \
            else Liveness.AlwaysLive


ExecutionStrategy = (PipelinedExecution, ShardedExecution, SerialPhasedExecution,
                     ParallelPhasedExecution)
