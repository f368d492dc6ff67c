"""Statistics of a call's events: duration, busy time and utilisation per IPU, and the fill,
main and flush of its pipelined steps."""
from __future__ import annotations

import dataclasses

from .schedule import HOST_TRACK, Event

COMPUTE_KINDS = ("F", "B", "update")


@dataclasses.dataclass
class Timeline:
    events: list[Event]
    num_ipus: int  # IPUs of one replica (every replica runs the same timeline)

    @property
    def duration(self) -> float:
        return max((e.end for e in self.events), default=0.0)

    def busy(self, ipu: int, kinds: tuple[str, ...] = COMPUTE_KINDS) -> float:
        """Seconds `ipu` spends on events of the given kinds."""
        return sum(e.duration for e in self.events if e.ipu == ipu and e.kind in kinds)

    def utilisation(self) -> list[float]:
        """Fraction of the call each IPU spends computing."""
        total = self.duration or 1.0
        return [self.busy(ipu) / total for ipu in range(self.num_ipus)]

    def max_concurrency(self) -> int:
        """The most IPUs computing (forward or backward) at the same instant."""
        # Times are rounded to picoseconds so that back-to-back events do not overlap by a rounding error.
        edges = sorted((round(t, 12), delta, e.ipu) for e in self.events
                       if e.ipu != HOST_TRACK and e.kind in ("F", "B") and e.duration > 0
                       for t, delta in ((e.start, +1), (e.end, -1)))
        active: dict[int, int] = {}
        best = 0
        for _, delta, ipu in edges:
            active[ipu] = active.get(ipu, 0) + delta
            best = max(best, sum(1 for count in active.values() if count > 0))
        return best

    def __repr__(self) -> str:
        return (f"Timeline({len(self.events)} events on {self.num_ipus} IPU(s), "
                f"{self.duration * 1e3:.3f} ms)")

    def device_span(self, step: int = 0) -> float:
        """Seconds from a device iteration's first IPU box to its last: the IPUs' part of the
        step, without the host I/O around it."""
        boxes = [e for e in self.events if e.step == step and e.ipu >= 0 and e.duration > 0]
        return max(e.end for e in boxes) - min(e.start for e in boxes) if boxes else 0.0

    def of_kind(self, *kinds: str) -> list[Event]:
        return [e for e in self.events if e.kind in kinds]


def pipeline_parts(events: list[Event]) -> list[tuple[str, float, float]]:
    """The fill, main and flush of each pipelined step, as (name, start, end) in seconds.

    Read off the events' cycles: a step of A micro-batches over P pipeline stages runs
    A + P - 1 cycles, the first P - 1 filling the pipeline and the last P - 1 flushing it
    (schedule.pipeline_cycles). Steps without cycles (sharded, phased) have no parts.
    """
    steps: dict[int | None, list[Event]] = {}
    for e in events:
        if e.cycle is not None:
            steps.setdefault(e.step, []).append(e)
    parts = []
    for step_events in steps.values():
        cycles = 1 + max(e.cycle for e in step_events)
        micro_batches = 1 + max(e.micro_batch for e in step_events if e.micro_batch is not None)
        fill = cycles - micro_batches  # P - 1
        if not 0 < fill < micro_batches:
            continue  # one stage: nothing to fill
        start = {cycles: max(e.end for e in step_events)}
        for e in step_events:
            start[e.cycle] = min(start.get(e.cycle, e.start), e.start)
        parts += [("fill", start[0], start[fill]), ("main", start[fill], start[micro_batches]),
                  ("flush", start[micro_batches], start[cycles])]
    return parts
