"""Placement: blocks -> stages -> IPUs, enforcing PopTorch's rules with errors that say what to change."""
from __future__ import annotations

import dataclasses
import logging
import warnings

from ..errors import Error
from .capture import WHOLE_MODEL, Graph
from .phases import verify_liveness
from .rules import verify_counts, verify_recomputation
from .spec import AutoRule, RunSpec, StageSpec, StrategyKind


@dataclasses.dataclass
class Stage:
    index: int  # position in the forward pass
    ipu: int
    blocks: list[str]
    phase: int | None = None


@dataclasses.dataclass
class Placement:
    kind: StrategyKind
    stages: list[Stage]
    ipus_per_replica: int
    replicas: int
    ipus_acquired: int  # after rounding up to a power of two

    @property
    def block_ipu(self) -> dict[str, int]:
        return {b: s.ipu for s in self.stages for b in s.blocks}

    def stages_on(self, ipu: int) -> list[Stage]:
        return [s for s in self.stages if s.ipu == ipu]

    def describe(self) -> str:
        """One line per stage: `stage 0  IPU 0  B1`."""
        lines = []
        for s in self.stages:
            phase = "" if s.phase is None else f"phase {s.phase}  "
            lines.append(f"stage {s.index}  {phase}IPU {s.ipu}  {', '.join(s.blocks)}")
        return "\n".join(lines)


def stage_params(graph: Graph, stage: Stage) -> list[str]:
    """The weights a stage holds: those whose first use is in one of its blocks."""
    return [name for name, p in graph.params.items() if p.blocks and p.blocks[0] in stage.blocks]


def _quoted(names) -> str:
    return ", ".join(f"{n!r}" for n in names)


def verify_blocks(graph: Graph) -> None:
    """Once blocks are in use, every op must run inside one."""
    if graph.outside_blocks:
        shown = "; ".join(f"{op.name} in {op.module or 'the top-level forward'}"
                          for op in graph.outside_blocks[:3])
        raise Error(f"No active Block, all the ops must belong to a Block: "  # PopTorch's words
                    f"{len(graph.outside_blocks)} op(s) ran outside every poptorch.Block ({shown}). "
                    f"Once a model uses blocks, every op must belong to one: move the code inside a "
                    f"`with poptorch.Block(...)` scope, or start the block with "
                    f"poptorch.BeginBlock, whose block lasts until the next one begins.")


def _explicit_stages(graph: Graph, specs: tuple[StageSpec, ...], text: str) -> list[Stage]:
    owner: dict[str, int] = {}
    for index, stage_spec in enumerate(specs):
        for block in stage_spec.blocks:
            if block in owner:
                raise Error(f"block {block!r} is in two stages (stages {owner[block]} and {index}); "
                            f"put each block in exactly one Stage")
            owner[block] = index
    verify_blocks_staged(graph, list(owner), text)
    for block in owner:
        if block not in graph.blocks:  # a simulator check: PopTorch's getStage never sees it
            raise Error(f"{text} names block {block!r}, which the model never ran; the blocks "
                        f"it ran are {_quoted(graph.blocks)}")
    stages = []
    for index, stage_spec in enumerate(specs):
        annotated = {graph.blocks[b] for b in stage_spec.blocks} - {None}
        ipu = stage_spec.ipu if stage_spec.ipu is not None else (min(annotated) if annotated else index)
        stages.append(Stage(index, ipu, list(stage_spec.blocks)))
    return stages


def verify_blocks_staged(graph: Graph, staged: list[str], text: str) -> None:
    """Every block the model runs must be in a stage of an explicit strategy: PopTorch's
    getStage (python/options.py) asserts it for each block as the model enters it."""
    missing = [b for b in graph.blocks if b not in staged]
    if missing and graph.annotated:
        # PopTorch asserts (python/options.py: getStage), so the rule is an AssertionError
        raise AssertionError(f"Unknown Block {missing[0]!r} list of expected Blocks: {staged}. "
                    f"Every block the model runs must be in a poptorch.Stage of {text}; "
                    f"add {_quoted(missing)} to one.")


def _auto_stages(graph: Graph, spec: RunSpec) -> list[Stage]:
    strategy = spec.strategy
    if not graph.annotated:
        return [Stage(0, 0, [WHOLE_MODEL])]
    if strategy.auto == AutoRule.AUTO_INCREMENT:
        return [Stage(i, ipu if ipu is not None else i, [b])
                for i, (b, ipu) in enumerate(graph.blocks.items())]
    stages: dict[int, Stage] = {}
    for block, ipu in graph.blocks.items():
        if ipu is None:
            # PopTorch's words and class: an assert (python/options.py: _DefaultStageManager)
            raise AssertionError(
                        f"poptorch.AutoStage.SameAsIpu was selected but no IPU was specified for "
                        f"block {block}. "
                        f"{strategy.text} puts each block on the IPU its ipu_id names, and block "
                        f"{block!r} has no ipu_id. Give every block an IPU "
                        f"(poptorch.Block({block!r}, ipu_id=0)), or list the stages yourself: "
                        f"opts.setExecutionStrategy(poptorch.PipelinedExecution("
                        f"poptorch.Stage({block!r}).ipu(0), ...))")
        stages.setdefault(ipu, Stage(ipu, ipu, []))
        stages[ipu].blocks.append(block)
    ordered = sorted(stages.values(), key=lambda s: s.index)
    for position, stage in enumerate(ordered):
        stage.index = position
    return ordered


def _phased_stages(graph: Graph, spec: RunSpec) -> list[Stage]:
    phases = spec.strategy.phases
    try:
        verify_liveness(spec.strategy.liveness, spec.strategy.kind == StrategyKind.PARALLEL_PHASED)
    except ValueError as err:
        raise Error(str(err)) from None
    specs = tuple(stage_spec for phase in phases for stage_spec in phase)
    stages = _explicit_stages(graph, specs, spec.strategy.text)
    position, defaulted = 0, []
    for phase_index, phase in enumerate(phases):
        for index_in_phase, stage_spec in enumerate(phase):
            stage = stages[position]
            stage.phase, position = phase_index, position + 1
            if stage_spec.ipu is None and not {graph.blocks[b] for b in stage_spec.blocks} - {None}:
                stage.ipu = _default_phase_ipu(spec.strategy.kind, phase_index, index_in_phase)
                defaulted.append(stage)
            _check_parity(spec.strategy.kind, stage)
    if defaulted:
        _warn_default_phase_ipus(defaulted)
    return stages


def _check_parity(kind: StrategyKind, stage: Stage) -> None:
    """ParallelPhasedExecution runs even phases on even IPUs and odd phases on odd IPUs."""
    if kind == StrategyKind.PARALLEL_PHASED and stage.ipu % 2 != stage.phase % 2:
        parity = "even" if stage.phase % 2 == 0 else "odd"
        raise Error(f"When phases are executed in parallel: even phases must run on even IPUs "
                    f"and odd phases on odd IPUs. "  # PopTorch's words (Compiler.cpp)
                    f"Phase {stage.phase} puts stage {list(stage.blocks)} on IPU {stage.ipu}; "
                    f"use strategy.phase({stage.phase}).ipus(...) with {parity} IPU ids")


def _default_phase_ipu(kind: StrategyKind, phase: int, index: int) -> int:
    """The simulator's IPU for a phased stage given none: the stage's position in a serial
    phase; even IPUs for even phases and odd ones for odd phases in parallel execution."""
    return 2 * index + phase % 2 if kind == StrategyKind.PARALLEL_PHASED else index


def _warn_default_phase_ipus(stages: list[Stage]) -> None:
    """PopTorch has no default IPU for a phased stage (its IPU falls back to the stage id,
    which phased execution leaves at -1), so say which stages got one here. Logged on the
    "poptorch" logger, as PopTorch reports its stage choices, so no file path is printed."""
    shown = "; ".join(f"phase {s.phase} {s.blocks} -> IPU {s.ipu}" for s in stages[:4])
    more = f"; and {len(stages) - 4} more" if len(stages) > 4 else ""
    logging.getLogger("poptorch").warning(
        f"{len(stages)} phased stage(s) name no IPU (no Stage.ipu(), phase(i).ipus(...) or Block "
        f"ipu_id); PopTorch has no default for phased stages, so name them. The simulator "
        f"uses: {shown}{more}")


def _segments(graph: Graph, stages: list[Stage]) -> list[Stage]:
    """Sharded execution runs blocks in model order; neighbours on one IPU merge into one shard."""
    ipu_of = {b: s.ipu for s in stages for b in s.blocks}
    segments: list[Stage] = []
    for block in graph.blocks:
        if segments and segments[-1].ipu == ipu_of[block]:
            segments[-1].blocks.append(block)
        else:
            segments.append(Stage(len(segments), ipu_of[block], [block]))
    return segments


def verify_stage_order(graph: Graph, stages: list[Stage], text: str) -> None:
    """In a pipeline, activations only flow forward: no block may feed an earlier stage."""
    stage_of = {b: s.index for s in stages for b in s.blocks}
    highest, highest_block = -1, None
    for block in graph.blocks:
        if stage_of[block] < highest:
            raise Error(f"stage ids must ascend along the model in a pipeline: block {block!r} "
                        f"(stage {stage_of[block]}) runs after block {highest_block!r} (stage "
                        f"{highest}) under {text}. Use poptorch.AutoStage.AutoIncrement (a new "
                        f"stage per block), or order the stages as the model runs its blocks.")
        if stage_of[block] > highest:
            highest, highest_block = stage_of[block], block
    for src, dst in graph.edges:
        if src in stage_of and dst in stage_of and stage_of[dst] < stage_of[src]:
            raise Error(f"block {src!r} (stage {stage_of[src]}) feeds block {dst!r}, which is in "
                        f"an earlier stage ({stage_of[dst]}) under {text}: a pipeline only passes "
                        f"activations forward. Give the ops that use {src!r}'s result a block of "
                        f"their own in a later stage, or put both blocks in one stage.")


def verify_shared_weights(graph: Graph, stages: list[Stage]) -> None:
    ipu_of = {b: s.ipu for s in stages for b in s.blocks}
    for param in graph.params.values():
        ipus = {ipu_of[b] for b in param.blocks}
        if len(ipus) > 1:
            where = ", ".join(f"block {b!r} (IPU {ipu_of[b]})" for b in param.blocks)
            raise Error(f"layers that share weights must be on the same IPU: {param.name!r} is used "
                        f"by {where}. Put those blocks on one IPU.")


def _round_ipus(count: int, spec: RunSpec) -> int:
    power = 1 << (count - 1).bit_length()
    if count == power or (count > 64 and count % 64 == 0):
        return count
    if not spec.auto_round_num_ipus:  # PopTorch's words (popart_compiler CompilerImpl.cpp)
        raise Error(f"The model specifies the use of {count} IPUs, however PopTorch must reserve "
                    f"a minimum of {power} in order to allow the model to run, because PopTorch "
                    f"must reserve a power of 2 or maximum of 64 IPUs per process. Please "
                    f"reconfigure your model to use a different number of IPUs or set "
                    f"poptorch.Options().autoRoundNumIPUs(True). Here {count} is IPUs per "
                    f"replica x replication factor, and {count} is not a power of two: use "
                    f"{power} IPUs, or autoRoundNumIPUs(True) to reserve {power} and leave "
                    f"{power - count} idle.")
    warnings.warn(f"autoRoundNumIPUs: reserving {power} IPUs for a model that needs {count}",
                  stacklevel=3)
    return power


def merge_same_ipu_stages(stages: list[Stage]) -> list[Stage]:
    """Consecutive pipeline stages on one IPU become one stage, as PopTorch and PopART merge them.

    PopTorch adds a pipeline stage only when the IPU changes (`Compiler::setActiveIpu`), and
    PopART's `mergeConsecutivePipelineStages` merges neighbours with the same virtual graph
    before checking the pipeline depth. So optimum's one-block-per-layer AutoIncrement
    placement runs as one stage per IPU switch; the merged blocks run back to back in one
    pipeline cycle and share one stash.
    """
    merged: list[Stage] = []
    for stage in stages:
        if merged and merged[-1].ipu == stage.ipu and stage.phase is None:
            merged[-1].blocks.extend(stage.blocks)
        else:
            merged.append(Stage(len(merged), stage.ipu, list(stage.blocks), stage.phase))
    return merged


def place(graph: Graph, spec: RunSpec) -> Placement:
    """Turn the captured blocks and the strategy into stages on IPUs, or raise Error."""
    verify_blocks(graph)
    strategy = spec.strategy
    if strategy.kind.phased:
        stages = _phased_stages(graph, spec)
    elif strategy.stages is not None:
        stages = _explicit_stages(graph, strategy.stages, strategy.text)
    else:
        stages = _auto_stages(graph, spec)
    if strategy.kind == StrategyKind.PIPELINED:
        verify_stage_order(graph, stages, strategy.text)
        stages = merge_same_ipu_stages(stages)
    elif strategy.kind == StrategyKind.SHARDED:
        stages = _segments(graph, stages)
    verify_shared_weights(graph, stages)
    verify_counts(spec, len(stages))
    verify_recomputation(spec, len(stages))
    per_replica = 1 + max(s.ipu for s in stages)
    needed = per_replica * spec.pod_replicas
    acquired = _round_ipus(needed, spec)
    if acquired > spec.system.num_ipus:
        waiting = (" (POPTORCH_WAIT_FOR_IPU=1 waits for IPUs other jobs hold; this system has no "
                   "other jobs, so there is nothing to wait for)"
                   if spec.wait_for_ipu else "")
        raise Error(f"failed to acquire {acquired} IPUs: this model needs {per_replica} IPU(s) per "
                    f"replica x {spec.pod_replicas} replica(s), and the simulated system has "
                    f"{spec.system.num_ipus}{waiting}. Use fewer IPUs or replicas, or a bigger "
                    f"system: ipu_tutorials.set_system(num_ipus={acquired}).")
    return Placement(strategy.kind, stages, per_replica, spec.pod_replicas, acquired)
