"""Stages, phases and the four multi-IPU execution strategies (descriptions; compile checks them).

Each class has PopTorch's public surface and no more (python/options.py at sdk/poptorch/3.4.0):
what the simulator reads is kept under PopTorch's own private names (`_ipu`, `_phases`,
`_tensors_liveness`, ...), and each rule PopTorch checks with `assert` raises AssertionError
here too, with PopTorch's words.
"""
from __future__ import annotations

from ._checks import check_int
from .enums import AutoStage, Liveness


# Files saved (PoplarExecutor.save) before the strategies kept PopTorch's private names hold
# these attributes; each is read back under its present name.
_OLD_NAMES = {"blocks": "_blocks", "auto_stage": "_auto_stage", "stages": "_stages",
              "phases": "_phases", "separate_backward_phase": "_separate_backward_phase",
              "liveness": "_tensors_liveness"}


class _Restorable:
    """Unpickles a strategy object saved under its older attribute names."""

    def __setstate__(self, state: dict) -> None:
        state = dict(state)
        if "send_tensors_off_chip_after_fwd" in state:  # ParallelPhasedExecution's old flag
            off = state.pop("send_tensors_off_chip_after_fwd")
            state["_tensors_liveness"] = Liveness.OffChipAfterFwd if off else Liveness.AlwaysLive
        for old, new in _OLD_NAMES.items():
            if old in state and not (old == "stages" and isinstance(self, Phase)):
                state[new] = state.pop(old)
        if isinstance(self, Stage):
            state["_blocks"] = tuple(state.get("_blocks", ()))
        if "_stages" in state and state["_stages"] is not None:
            state.setdefault("_block_map", _block_map(state["_stages"]))
        if "_phases" in state:
            stages = [s for phase in state["_phases"] for s in phase.stages]
            state.setdefault("_block_map", _block_map(stages))
            state.setdefault("_tensors_liveness", Liveness.AlwaysLive)
        if isinstance(self, _StrategyBase):
            state.setdefault("_block_map", {})
        self.__dict__.update(state)


def _check_block_ids(block_ids) -> None:
    """PopTorch's rule for the blocks of a Stage: each id is a string (the user_id given to
    poptorch.Block or BeginBlock)."""
    assert all(isinstance(b, str) for b in block_ids), (
        f"Block IDs are supposed to be strings but got {block_ids}")


class Stage(_Restorable):
    """One or more blocks that run on one IPU: `Stage("B1", "B2").ipu(0)`."""

    def __init__(self, *block_ids: str):
        _check_block_ids(block_ids)
        if not block_ids:
            raise ValueError("poptorch.Stage needs at least one block id, e.g. Stage(\"B1\")")
        self._blocks = block_ids
        self._ipu: int | None = None

    @property
    def blocks(self) -> tuple[str, ...]:
        """The ids of the blocks this stage is made of."""
        return self._blocks

    def ipu(self, ipu: int) -> "Stage":
        """Run this stage on IPU `ipu`, as PopTorch's `Stage.ipu`.

        Returns:
            This Stage, so that `Stage("B1").ipu(0)` reads as one expression (as in PopTorch).

        Raises:
            AssertionError: `ipu` is not an int (PopTorch asserts). ValueError: it is negative.
        """
        assert isinstance(ipu, int) and not isinstance(ipu, bool), (
            f"Stage.ipu() expects an integer, got {type(ipu).__name__} {ipu!r}")
        self._ipu = check_int("Stage.ipu()", ipu, minimum=0)
        return self

    def __repr__(self) -> str:
        names = ", ".join(f'"{b}"' for b in self._blocks)
        return f"Stage({names})" + ("" if self._ipu is None else f".ipu({self._ipu})")


def _as_stage(item) -> Stage:
    """A Stage, one block id, or a list of block ids (one Stage made of those blocks)."""
    if isinstance(item, Stage):
        return item
    if isinstance(item, str):
        return Stage(item)
    assert all(isinstance(b, str) for b in item), (
        f"Block IDs are supposed to be strings but got {item}")
    return Stage(*item)


def _block_map(stages) -> dict[str, Stage]:
    """Each block's stage; a block in two stages breaks PopTorch's rule."""
    found = {}
    for stage in stages:
        for block in stage.blocks:
            assert block not in found, f"{block} associated with more than one stage"
            found[block] = stage
    return found


class _StrategyBase(_Restorable):
    """What every strategy offers: the stage that holds a block (PopTorch's `stage`)."""

    _block_map: dict[str, Stage]

    def stage(self, block_id: str) -> Stage:
        """The Stage holding `block_id`, e.g. to move it: `strategy.stage("B1").ipu(0)`.

        Raises:
            AssertionError: no stage holds that block (PopTorch asserts).
        """
        assert block_id in self._block_map, (
            f"Unknown block {block_id}; the stages hold {list(self._block_map)}")
        return self._block_map[block_id]


class PipelinedExecution(_StrategyBase):
    """Stages on different IPUs work on different micro-batches at the same time."""

    def __init__(self, *args):
        self._auto_stage = AutoStage.SameAsIpu
        self._stages: list[Stage] | None = None
        if len(args) == 1 and isinstance(args[0], AutoStage):
            self._auto_stage = args[0]
        elif args:
            if any(isinstance(a, AutoStage) for a in args):
                raise TypeError(f"{type(self).__name__}: pass either one AutoStage or "
                                f"stages/block ids, not both")
            # A stage without .ipu() runs on its blocks' ipu_id, else on the IPU numbered like
            # the stage: plain block ids "B1", "B2", ... land on IPUs 0, 1, ... (placement.py).
            self._stages = [_as_stage(a) for a in args]
        self._block_map = _block_map(self._stages or [])

    def __repr__(self) -> str:
        inner = (", ".join(map(repr, self._stages)) if self._stages is not None
                 else f"AutoStage.{self._auto_stage.name}")
        return f"{type(self).__name__}({inner})"


class ShardedExecution(PipelinedExecution):
    """Stages run one after another: one IPU is busy at a time."""


class Phase(_Restorable):
    """Stages that run at the same time on a group of IPUs, in phased execution."""

    def __init__(self, *arg):
        """Stages (`Phase(Stage("A"), Stage("B"))`), or block ids that form one Stage
        (`Phase("A", "B")`), as PopTorch takes them."""
        if not arg:
            raise ValueError("poptorch.Phase needs at least one stage or block id")
        if all(isinstance(s, Stage) for s in arg):
            self.stages = arg
        else:
            assert all(isinstance(s, str) for s in arg), (
                f"All arguments must either be block IDs (strings) or Stages: "
                f"{[type(s) for s in arg]}")
            self.stages = [Stage(*arg)]

    def stage(self, idx: int) -> Stage:
        """The phase's stage number `idx`."""
        return self.stages[idx]

    def ipus(self, *ipus: int) -> None:
        """Give each of this phase's stages its IPU, in order (PopTorch's `Phase.ipus`).

        It returns None, as PopTorch's does: call it on the phase, not inside the expression
        that builds the strategy (`strategy.phase(0).ipus(0, 1)`, or `Stage(...).ipu(n)`).

        Raises:
            AssertionError: the count of IPUs is not the count of stages (PopTorch asserts).
        """
        assert len(ipus) == len(self.stages), (
            f"Phase contains {len(self.stages)} stages but you provided {len(ipus)} ipus "
            f"{list(ipus)}; give one IPU per stage {list(self.stages)}")
        for stage, ipu in zip(self.stages, ipus):
            stage.ipu(ipu)

    def __repr__(self) -> str:
        return "Phase(" + ", ".join(map(repr, self.stages)) + ")"


class _IPhasedExecution(_StrategyBase):
    """Phases run one after another; their weights stream in from off-chip memory."""

    def __init__(self, *phases):
        """Each argument is one phase: a Phase, a list of Stages or block ids (one Phase), or
        one Stage or block id, as PopTorch takes them."""
        assert phases, ("There is currently no AutoStage for PhasedExecution, please "
                        "explicitly specify the phases")
        self._phases = [p if isinstance(p, Phase) else Phase(*(p if isinstance(p, list) else [p]))
                        for p in phases]
        self._block_map = _block_map(s for p in self._phases for s in p.stages)
        self._separate_backward_phase = False
        self._tensors_liveness = Liveness.AlwaysLive
        # A stage without .ipu() runs on its blocks' ipu_id; with neither, the simulator picks
        # an IPU at compile and warns, as PopTorch has no default (simulator/placement.py).

    def phase(self, phase: int) -> Phase:
        """The phase at index `phase` (from 0), e.g. to place it: `strategy.phase(0).ipus(0, 1)`.

        Raises:
            AssertionError: `phase` is not an int >= 0 (PopTorch asserts). IndexError: there
                is no such phase.
        """
        assert isinstance(phase, int) and phase >= 0, "Phases are identified by positive integers"
        if phase >= len(self._phases):
            raise IndexError(f"{type(self).__name__} has phases 0..{len(self._phases) - 1}, "
                             f"not {phase}")
        return self._phases[phase]

    def useSeparateBackwardPhase(self, use: bool = True):
        """Give the backward pass phases of its own, as PopTorch does.

        By default the last forward phase and the first backward phase are one phase (with
        3 forward phases, 0, 1, 2 are followed by 2, 3, 4 backward); with `use` True no phase
        is shared (0, 1, 2 are followed by 4, 5, 6). The simulator numbers its phases so
        (`simulator/phases.py`).

        Returns:
            This strategy, so that settings chain.
        """
        assert isinstance(use, bool), f"useSeparateBackwardPhase() expects a bool, got {use!r}"
        self._separate_backward_phase = use
        return self

    def __repr__(self) -> str:
        # each stage shows its IPU as `.ipu(n)`: code that builds the same strategy
        return f"{type(self).__name__}({', '.join(map(repr, self._phases))})"


class SerialPhasedExecution(_IPhasedExecution):
    """All phases on one group of IPUs, one after another."""

    def setTensorsLiveness(self, liveness: Liveness):
        """When streamed tensors leave the chip (poptorch.Liveness); the memory plan and the
        timeline follow it (simulator/phases.py).

        Raises:
            AssertionError: `liveness` is not a poptorch.Liveness (PopTorch asserts).
        """
        assert isinstance(liveness, Liveness), (
            f"setTensorsLiveness() expects a poptorch.Liveness, got {liveness!r}")
        self._tensors_liveness = liveness
        return self


class ParallelPhasedExecution(_IPhasedExecution):
    """Even phases on even IPUs, odd phases on odd IPUs: one group computes while the other loads."""

    def sendTensorsOffChipAfterFwd(self, off_chip: bool = True):
        """Store the forward's activations off chip until the backward (Liveness.OffChipAfterFwd).

        Raises:
            AssertionError: `off_chip` is not a bool (PopTorch asserts).
        """
        assert isinstance(off_chip, bool), (
            f"sendTensorsOffChipAfterFwd() expects a bool, got {off_chip!r}")
        self._tensors_liveness = Liveness.OffChipAfterFwd if off_chip else Liveness.AlwaysLive
        return self


ExecutionStrategy = (PipelinedExecution, ShardedExecution, SerialPhasedExecution,
                     ParallelPhasedExecution)
