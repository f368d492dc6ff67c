"""Phased execution: which phase runs at which phase id, what each IPU holds then, and its timeline.

PopTorch numbers the phases for PopART (popart_compiler CompilerOptions.hpp, Compiler.cpp):
forward phase q runs at phase id q x stride and its backward at
`first_backward + (n - 1 - q) x stride`, where the liveness sets the stride and the gap:

    liveness                   stride  backward of the last forward phase
    AlwaysLive                 1       same id (shared), or id + 2 with useSeparateBackwardPhase
    OffChipAfterFwd            1       id + 4: no forward tensor lives into the backward
    OffChipAfterFwdNoOverlap   2       id + 4
    OffChipAfterEachPhase      4       id + 4: nothing lives from one phase to the next

"Tensors have a liveness of [phase, phase + 2]". The simulator reads this as: a phase's
streamed tensors (weights, gradient accumulators) arrive during the id before it runs and
leave during the id after; an activation stays on chip from its forward to its backward when
they are at most 2 ids apart, else it is stored after its forward and loaded before its
backward. Within an id, an IPU computes while it streams (PopART overlaps the copies with
compute); an id lasts as long as the slowest IPU's compute or streaming. Each micro-batch
runs every phase, so the weights stream in again for each micro-batch (PopART's batch
serialisation, which shares one load among several, is not modelled).

Legend: n forward phases, q a phase, s the stride, X a phase id.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

from .schedule import Event

ALWAYS_LIVE, OFF_CHIP_AFTER_FWD, OFF_CHIP_AFTER_FWD_NO_OVERLAP, OFF_CHIP_AFTER_EACH_PHASE = range(4)
LIVENESS_NAMES = ("AlwaysLive", "OffChipAfterFwd", "OffChipAfterFwdNoOverlap",
                  "OffChipAfterEachPhase")
STRIDE = (1, 1, 2, 4)
WINDOW = 2  # a tensor made at id X is live through id X + 2
SERIAL_ONLY = (OFF_CHIP_AFTER_FWD_NO_OVERLAP, OFF_CHIP_AFTER_EACH_PHASE)


@dataclasses.dataclass(frozen=True)
class PhaseWork:
    """One stage of one phase: where it runs, what it streams (bytes) and computes (seconds)."""

    ipu: int
    phase: int
    weights: int = 0  # off-chip weights it streams in before each run
    gradients: int = 0  # off-chip gradient accumulators, in and out around its backward
    activations: int = 0  # its forward activations for one micro-batch (training)
    boundary: int = 0  # its outputs passed to the next phase
    forward: float = 0.0
    backward: float = 0.0
    send: float = 0.0  # inter-IPU copy of its outputs


@dataclasses.dataclass(frozen=True)
class Run:
    """Stage `stage` (index into the works) runs its forward 'F' or backward 'B' at phase id."""

    id: int
    stage: int
    kind: str


def verify_liveness(liveness: int, parallel: bool) -> None:
    """PopTorch allows the two strided livenesses only with serial phases (Compiler.cpp)."""
    if parallel and liveness in SERIAL_ONLY:
        raise ValueError(f"Liveness.{LIVENESS_NAMES[liveness]} is only supported for serial phase "
                         f"execution: use poptorch.SerialPhasedExecution(...).setTensorsLiveness"
                         f"(...), or ParallelPhasedExecution with AlwaysLive or "
                         f"sendTensorsOffChipAfterFwd()")


def backward_gap(liveness: int, separate_backward: bool) -> int:
    """Phase ids from the last forward phase to the first backward phase."""
    if liveness != ALWAYS_LIVE:
        return 4
    return 2 if separate_backward else 0


def program(works: list[PhaseWork], liveness: int, separate_backward: bool,
            training: bool) -> list[Run]:
    """Every run of one micro-batch, in phase-id order (forward ids, then backward ids)."""
    s = STRIDE[liveness]
    n = 1 + max(w.phase for w in works)
    runs = [Run(w.phase * s, i, "F") for i, w in enumerate(works)]
    if training:
        first_backward = (n - 1) * s + backward_gap(liveness, separate_backward)
        runs += [Run(first_backward + (n - 1 - w.phase) * s, i, "B") for i, w in enumerate(works)]
    return sorted(runs, key=lambda r: (r.id, r.kind == "B"))


def _forward_id(runs: list[Run], stage: int) -> int:
    return next(r.id for r in runs if r.stage == stage and r.kind == "F")


def _reloads(run: Run, runs: list[Run]) -> bool:
    """A backward at the same id as its forward (the shared turn) finds its weights on chip."""
    return run.kind == "F" or _forward_id(runs, run.stage) != run.id


def _kept(run: Run, runs: list[Run]) -> bool:
    """Whether a backward's forward activations stayed on chip (at most WINDOW ids earlier)."""
    return run.id - _forward_id(runs, run.stage) <= WINDOW


def residency(works: list[PhaseWork], runs: list[Run]) -> list[tuple[int, int, str, int, int, int]]:
    """Intervals (ipu, stage, category, first id, last id, bytes) of what IPUs hold on chip."""
    spans = []
    for run in runs:
        work, x = works[run.stage], run.id
        if _reloads(run, runs) and work.weights:
            spans.append((work.ipu, run.stage, "weights", x - 1, x + 1, work.weights))
        if run.kind == "B" and work.gradients:
            spans.append((work.ipu, run.stage, "gradients", x - 1, x + 1, work.gradients))
        if run.kind == "B" and work.activations:
            forward = _forward_id(runs, run.stage)
            pieces = [(forward, x)] if _kept(run, runs) else [(forward, forward + 1), (x - 1, x)]
            spans += [(work.ipu, run.stage, "activations", a, b, work.activations)
                      for a, b in pieces]
    return spans


def peaks(works: list[PhaseWork], runs: list[Run]) -> dict[int, dict[str, int]]:
    """The most bytes of each category an IPU holds at any phase id (an upper bound).

    A stage's tensor counts once at an id even when its forward's and backward's windows meet.
    """
    spans = residency(works, runs)
    result: dict[int, dict[str, int]] = {w.ipu: {} for w in works}
    for x in range(min((s[3] for s in spans), default=0), max((s[4] for s in spans), default=-1) + 1):
        held: dict[tuple[int, str], dict[int, int]] = {}
        for ipu, stage, category, lo, hi, num_bytes in spans:
            if lo <= x <= hi:
                held.setdefault((ipu, category), {})[stage] = num_bytes
        for (ipu, category), by_stage in held.items():
            result[ipu][category] = max(result[ipu].get(category, 0), sum(by_stage.values()))
    return result


def streams(works: list[PhaseWork], runs: list[Run], stride: int) -> dict[tuple[int, int], int]:
    """Bytes each IPU streams during each phase id: (ipu, id) -> bytes in plus out."""
    traffic: dict[tuple[int, int], int] = {}

    def add(ipu: int, x: int, num_bytes: int) -> None:
        if num_bytes:
            traffic[(ipu, x)] = traffic.get((ipu, x), 0) + num_bytes

    for run in runs:
        work, x = works[run.stage], run.id
        if _reloads(run, runs):
            add(work.ipu, x - 1, work.weights)
        if run.kind == "B":
            add(work.ipu, x - 1, work.gradients)
            add(work.ipu, x + 1, work.gradients)
            if not _kept(run, runs):  # stored after the forward, loaded before the backward
                add(work.ipu, _forward_id(runs, run.stage) + 1, work.activations)
                add(work.ipu, x - 1, work.activations)
        elif stride > WINDOW and work.phase + 1 < 1 + max(w.phase for w in works):
            add(work.ipu, x + 1, work.boundary)  # out after this phase, in before the next
            add(work.ipu, x + stride - 1, work.boundary)
    return traffic


def phased_step(works: list[PhaseWork], liveness: int, separate_backward: bool, a: int,
                t0: float, step: int, *, training: bool,
                seconds: Callable[[int], float]) -> tuple[list[Event], float]:
    """Events of one step: A micro-batches, each running every phase id in turn.

    Args:
        seconds: streaming time of a number of bytes on one IPU (costs.stream_seconds).
    Returns:
        The events and the time the step's last phase ends.
    """
    runs = program(works, liveness, separate_backward, training)
    traffic = streams(works, runs, STRIDE[liveness])
    ids = sorted({r.id for r in runs} | {x for _, x in traffic})
    events, t = [], t0
    for m in range(a):
        for x in ids:
            busy: dict[int, float] = {}
            for run in (r for r in runs if r.id == x):
                work = works[run.stage]
                duration = work.forward + work.send if run.kind == "F" else work.backward
                events.append(Event(work.ipu, t + busy.get(work.ipu, 0.0), duration, run.kind, m,
                                    run.stage, step))
                busy[work.ipu] = busy.get(work.ipu, 0.0) + duration
            streaming = {ipu: seconds(b) for (ipu, at), b in sorted(traffic.items()) if at == x}
            events += [Event(ipu, t, d, "stream", m, None, step) for ipu, d in streaming.items()]
            t += max([*busy.values(), *streaming.values(), 0.0])
    return events, t


def describe(works: list[PhaseWork], runs: list[Run]) -> str:
    """One line per IPU: what runs at each phase id ('F0' forward of phase 0, '.' idle)."""
    ids = range(min(r.id for r in runs), max(r.id for r in runs) + 1)
    lines = []
    for ipu in sorted({w.ipu for w in works}):
        cells = [" ".join(f"{r.kind}{works[r.stage].phase}" for r in runs
                          if r.id == x and works[r.stage].ipu == ipu) or "." for x in ids]
        lines.append(f"IPU {ipu}  " + "  ".join(c.ljust(5) for c in cells).rstrip())
    return "\n".join(lines)
