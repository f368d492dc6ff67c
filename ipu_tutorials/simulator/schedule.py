"""Schedules: pure functions from stage costs and counts to timeline events.

Legend: N stages, A micro-batches per step (gradient accumulation), D steps per call (device
iterations), P = 2N-1 pipeline stages when training. Times are simulated seconds.

A pipelined training step on N = 2 stages with A = 3, as `pipeline_grid` draws it
(cycle across, IPU down; F = forward, B = backward, digit = micro-batch):

    IPU 0  F0  F1  F2 B0  B1  B2      pipeline stages 0 (forward) and 2 (backward)
    IPU 1  .   F0 B0  F1 B1  F2 B2  .  pipeline stage 1 (last forward merged with first backward)

P-1 fill cycles, A-(P-1) main cycles and P-1 flush cycles: A + 2N - 2 cycles in all. The
clock of any pipeline, which (micro-batch, stage) runs in which cycle, is `clock_cycles`;
`pipeline_cycles` gives each of its pipeline stages its forward or backward work.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

from .rules import pipeline_depth
from .spec import StrategyKind

PhasedStep = Callable[[int, float, int], "tuple[list[Event], float]"]
HOST_TRACK = -1  # the ipu value of host events
HOST_DATA_TRACK = -2  # the ipu value of the host's data preparation (the loader's work)


@dataclasses.dataclass(frozen=True)
class Action:
    """One stage's work on one micro-batch: 'F' forward or 'B' backward."""

    kind: str
    stage: int
    micro_batch: int

    def __str__(self) -> str:
        return f"{self.kind}{self.micro_batch}"


@dataclasses.dataclass(frozen=True)
class Event:
    ipu: int  # HOST_TRACK for the host, HOST_DATA_TRACK for its data loader
    start: float
    duration: float
    kind: str  # F, B, copy, update, allreduce, stream, host, data, handover
    micro_batch: int | None = None
    stage: int | None = None
    step: int | None = None  # device iteration
    cycle: int | None = None  # the pipeline cycle of a pipelined step's F, B and copy events

    @property
    def end(self) -> float:
        return self.start + self.duration


@dataclasses.dataclass(frozen=True)
class StageTimes:
    """What the schedule needs to know about one stage."""

    ipu: int
    forward: float
    backward: float
    send: float  # copy of its activations to the next stage
    receive: float = 0.0  # copy of the gradient of its input back to the previous stage
    phase: int | None = None


@dataclasses.dataclass(frozen=True)
class StepCosts:
    """Per-step costs outside the stages."""

    host_in: float  # inputs of one micro-batch (all replicas)
    host_out: float  # outputs returned per step, given the output mode
    host_latency: float  # a synchronisation at the start and at the end of a call
    update: dict[int, float]  # ipu -> weight update (0 for inference)
    allreduce: float = 0.0
    update_stream: dict[int, float] = dataclasses.field(default_factory=dict)  # ipu -> one way
    host_data: float = 0.0  # the host's preparation of one call's samples
    data_async: bool = True  # prepared while the device runs (the next call's data)
    instance_host: float = 0.0  # each host process's own work on the call's inputs, first


# --- which work happens when ---------------------------------------------------------------
# The clock of a pipeline, M micro-batches over S stages, as (micro-batch, stage) per cycle;
# for M = 4, S = 3 the staircase is:
#
#   cycle 0  (0,0)
#   cycle 1  (1,0) (0,1)
#   cycle 2  (2,0) (1,1) (0,2)
#   cycle 3  (3,0) (2,1) (1,2)
#   cycle 4        (3,1) (2,2)
#   cycle 5              (3,2)
def clock_cycles(micro_batches: int, stages: int) -> list[list[tuple[int, int]]]:
    """The (micro-batch, stage) pairs that run in each clock cycle of a pipeline.

    In cycle k, stage s works on micro-batch k - s, if there is one. M micro-batches over S
    stages take M + S - 1 cycles: S - 1 fill the pipeline, S - 1 drain it, and in the M - S + 1
    between (when M >= S) every stage is busy.
    """
    return [[(cycle - stage, stage)
             for stage in range(max(0, cycle - micro_batches + 1), min(cycle + 1, stages))]
            for cycle in range(micro_batches + stages - 1)]


def pipeline_stage_work(p: int, n: int, training: bool) -> list[tuple[str, int]]:
    """What pipeline stage p does: [('F', stage)], [('F', s), ('B', s)] or [('B', stage)]."""
    if not training:
        return [("F", p)]
    if p < n - 1:
        return [("F", p)]
    if p == n - 1:
        return [("F", p), ("B", p)]
    return [("B", pipeline_depth(n, training) - 1 - p)]


def pipeline_cycles(n: int, a: int, training: bool) -> list[list[Action]]:
    """The actions of each cycle of one pipelined step: the clock of its 2N-1 pipeline stages
    (N when not training), each pipeline stage doing its forward or backward work."""
    return [[Action(kind, stage, m) for m, p in cycle
             for kind, stage in pipeline_stage_work(p, n, training)]
            for cycle in clock_cycles(a, pipeline_depth(n, training))]


def sharded_order(n: int, a: int, training: bool) -> list[Action]:
    """One micro-batch at a time, forward through the stages and back down."""
    order = []
    for m in range(a):
        order += [Action("F", s, m) for s in range(n)]
        if training:
            order += [Action("B", s, m) for s in reversed(range(n))]
    return order


def pipeline_grid(ipu_of_stage: list[int], a: int, training: bool, num_ipus: int | None = None,
                  max_cycles: int = 24) -> str:
    """A compact text picture of one pipelined step: a row per IPU, a column per cycle."""
    num_ipus = num_ipus or 1 + max(ipu_of_stage)
    cycles = pipeline_cycles(len(ipu_of_stage), a, training)
    shown = cycles[:max_cycles]
    cells = [[" ".join(str(x) for x in cycle if ipu_of_stage[x.stage] == ipu) or "."
              for cycle in shown] for ipu in range(num_ipus)]
    width = max(len(c) for row in cells for c in row)
    lines = [f"IPU {ipu}  " + "  ".join(c.ljust(width) for c in row).rstrip()
             for ipu, row in enumerate(cells)]
    if len(cycles) > max_cycles:
        lines.append(f"... {len(cycles) - max_cycles} more cycles")
    return "\n".join(lines)


# --- timed events ---------------------------------------------------------------------------
def _duration(action: Action, stages: list[StageTimes]) -> float:
    stage = stages[action.stage]
    return stage.forward if action.kind == "F" else stage.backward


def _copy_after(action: Action, stages: list[StageTimes]) -> float:
    """The inter-IPU copy an action ends with: activations up, or gradients back down."""
    stage = stages[action.stage]
    neighbour = action.stage + 1 if action.kind == "F" else action.stage - 1
    if not 0 <= neighbour < len(stages) or stages[neighbour].ipu == stage.ipu:
        return 0.0
    return stage.send if action.kind == "F" else stage.receive


def pipelined_step(stages: list[StageTimes], a: int, training: bool, t0: float,
                   step: int) -> tuple[list[Event], float]:
    """Events of one pipelined step; every cycle ends with a sync across IPUs, then copies."""
    events, t = [], t0
    n = len(stages)
    for c, cycle in enumerate(pipeline_cycles(n, a, training)):
        busy: dict[int, float] = {}
        sends: dict[int, float] = {}
        for action in cycle:
            stage = stages[action.stage]
            start = t + busy.get(stage.ipu, 0.0)
            duration = _duration(action, stages)
            events.append(Event(stage.ipu, start, duration, action.kind, action.micro_batch,
                                action.stage, step, c))
            busy[stage.ipu] = busy.get(stage.ipu, 0.0) + duration
            copy = _copy_after(action, stages)
            if copy:
                sends[stage.ipu] = max(sends.get(stage.ipu, 0.0), copy)
        compute = max(busy.values(), default=0.0)
        for ipu, seconds in sorted(sends.items()):
            events.append(Event(ipu, t + compute, seconds, "copy", None, None, step, c))
        t += compute + max(sends.values(), default=0.0)
    return events, t


def sharded_step(stages: list[StageTimes], a: int, training: bool, t0: float,
                 step: int) -> tuple[list[Event], float]:
    """Events of one sharded step: exactly one IPU works at any moment."""
    events, t = [], t0
    order = sharded_order(len(stages), a, training)
    for i, action in enumerate(order):
        stage = stages[action.stage]
        duration = _duration(action, stages)
        events.append(Event(stage.ipu, t, duration, action.kind, action.micro_batch,
                            action.stage, step))
        t += duration
        following = order[i + 1] if i + 1 < len(order) else None
        copy = _copy_after(action, stages)
        if copy and following is not None and stages[following.stage].ipu != stage.ipu:
            events.append(Event(stage.ipu, t, copy, "copy", None, None, step))
            t += copy
    return events, t


def call_timeline(kind: StrategyKind, stages: list[StageTimes], costs: StepCosts, a: int, d: int,
                  training: bool, phased: PhasedStep | None = None) -> list[Event]:
    """All events of one call: a step per device iteration (pipelined inference runs the D
    micro-batches as one step), each with host input, stage work, update and outputs.
    Phased kinds need `phased(micro_batches, t0, step)`, the step of phases.phased_step."""
    if training:
        steps, per_step = d, a
    elif kind == StrategyKind.PIPELINED:  # inference pipelines the call's D micro-batches as one step
        steps, per_step = 1, d
    else:
        steps, per_step = d, 1
    events = [Event(HOST_TRACK, 0.0, costs.host_latency, "host")]
    t = costs.host_latency
    data_end = t
    if costs.host_data:  # asynchronous: the next call's data, while this one runs; else first
        events.append(Event(HOST_DATA_TRACK, t, costs.host_data, "data"))
        data_end = t + costs.host_data
        t = t if costs.data_async else data_end
    if costs.instance_host:  # the host process hands this call's inputs over; the device waits
        events.append(Event(HOST_DATA_TRACK, t, costs.instance_host, "handover"))
        t += costs.instance_host
    for step in range(steps):
        if costs.host_in:
            events.append(Event(HOST_TRACK, t, costs.host_in * per_step, "host", None, None, step))
            t = events[-1].end
        if kind == StrategyKind.PIPELINED:
            new, t = pipelined_step(stages, per_step, training, t, step)
        elif kind == StrategyKind.SHARDED:
            new, t = sharded_step(stages, per_step, training, t, step)
        else:
            new, t = phased(per_step, t, step)
        events += new
        t = _step_end(events, costs, training, t, step)
    t = max(t, data_end)  # the next call cannot start before its data is ready
    events.append(Event(HOST_TRACK, t, costs.host_latency, "host"))
    return events


def _step_end(events: list[Event], costs: StepCosts, training: bool, t: float, step: int) -> float:
    if training:
        if costs.allreduce:
            for ipu in costs.update:
                events.append(Event(ipu, t, costs.allreduce, "allreduce", None, None, step))
            t += costs.allreduce
        ends = [t]
        for ipu, seconds in costs.update.items():
            stream = costs.update_stream.get(ipu, 0.0)  # offloaded state: in, update, out
            for start, duration, kind in ((t, stream, "stream"), (t + stream, seconds, "update"),
                                          (t + stream + seconds, stream, "stream")):
                if duration:
                    events.append(Event(ipu, start, duration, kind, None, None, step))
            ends.append(t + 2 * stream + seconds)
        t = max(ends)
    if costs.host_out:
        events.append(Event(HOST_TRACK, t, costs.host_out, "host", None, None, step))
        t += costs.host_out
    return t
