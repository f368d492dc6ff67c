"""torch.distributed.pipelining's order of work per stage, as pure functions, and its timing on
stage times beside the simulated IPU's pipeline.

Legend: P stages (one per process, as lesson 4's four IPUs), M micro-batches per step. A
stage's order is a list of the simulator's Actions ("F3": forward of micro-batch 3, "B3": its
backward), written from ScheduleGPipe's and Schedule1F1B's `_step_microbatches` (torch 2.14),
the code that runs (their dry run, `pipeline_order`, numbers 1F1B's last stage one too high):

    GPipe, P = 2, M = 3              1F1B, P = 2, M = 3
    stage 0  F0 F1 F2 B0 B1 B2       stage 0  F0 F1 B0 F2 B1 B2
    stage 1  F0 F1 F2 B0 B1 B2       stage 1  F0 B0 F1 B1 F2 B2

GPipe runs every forward, then every backward; 1F1B runs min(M, P - stage) forwards, then
alternates a backward and a forward, then the remaining backwards.
"""
from __future__ import annotations

from ..simulator.schedule import Action, Event, StageTimes, pipelined_step

SCHEDULES = ("GPipe", "1F1B")


def gpipe_order(stage: int, stages: int, micro_batches: int) -> list[Action]:
    """All M forwards, then all M backwards (the same on every stage)."""
    return ([Action("F", stage, m) for m in range(micro_batches)]
            + [Action("B", stage, m) for m in range(micro_batches)])


def one_f_one_b_order(stage: int, stages: int, micro_batches: int) -> list[Action]:
    """Warm-up forwards (P - stage of them, at most M), one backward and one forward in turn,
    then the backwards left over."""
    warmup = min(micro_batches, stages - stage)
    order = [Action("F", stage, m) for m in range(warmup)]
    forwards, backwards = warmup, 0
    while True:
        order.append(Action("B", stage, backwards))
        backwards += 1
        if forwards == micro_batches:
            break
        order.append(Action("F", stage, forwards))
        forwards += 1
    return order + [Action("B", stage, m) for m in range(backwards, micro_batches)]


def check_micro_batches(schedule: str, stages: int, micro_batches: int) -> None:
    """torch's rules for a schedule's counts.

    Raises:
        ValueError: an unknown schedule, fewer than one micro-batch, or 1F1B with fewer
            micro-batches than stages (torch's own message).
    """
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule {schedule!r}; choose one of {', '.join(SCHEDULES)}")
    if micro_batches < 1:
        raise ValueError(f"a step needs at least one micro-batch, got {micro_batches}")
    if schedule == "1F1B" and micro_batches < stages:
        raise ValueError(f"Number of microbatches ({micro_batches}) must be greater than or "
                         f"equal to the number of stages ({stages}).")


def torch_orders(schedule: str, stages: int, micro_batches: int) -> list[list[Action]]:
    """Every stage's order of one step under `schedule` ("GPipe" or "1F1B").

    Raises:
        ValueError: see check_micro_batches.
    """
    check_micro_batches(schedule, stages, micro_batches)
    order_of = gpipe_order if schedule == "GPipe" else one_f_one_b_order
    return [order_of(stage, stages, micro_batches) for stage in range(stages)]


def parse_order(words: list[str], stage: int) -> list[Action]:
    """A recorded order ("F0", "B0", ...) of one stage as Actions."""
    return [Action(word[0], stage, int(word[1:])) for word in words]


def order_text(orders: list[list[Action]], label: str = "stage") -> str:
    """A row per stage: its actions in the order it runs them."""
    return "\n".join(f"{label} {s}  " + " ".join(str(a) for a in order)
                     for s, order in enumerate(orders))


def replay(orders: list[list[Action]], times: list[StageTimes]) -> list[Event]:
    """Time the orders: each stage runs its actions one after another, and an action starts
    once its input has arrived (the previous stage's forward, or the next stage's backward,
    plus the copy between them). Sends do not hold up their sender.

    Raises:
        ValueError: the orders wait on each other for ever (an order torch would deadlock on).
    """
    done: dict[tuple[str, int, int], float] = {}
    free, position, events = [0.0] * len(orders), [0] * len(orders), []
    while any(p < len(order) for p, order in zip(position, orders)):
        moved = False
        for s, order in enumerate(orders):
            while position[s] < len(order):
                action = order[position[s]]
                ready = _input_ready(action, done, times)
                if ready is None:
                    break
                start = max(free[s], ready)
                duration = times[s].forward if action.kind == "F" else times[s].backward
                events.append(Event(s, start, duration, action.kind, action.micro_batch, s, 0))
                free[s] = done[(action.kind, s, action.micro_batch)] = start + duration
                position[s] += 1
                moved = True
        if not moved:
            stuck = ", ".join(f"stage {s} at {order[p]}" for s, (p, order)
                              in enumerate(zip(position, orders)) if p < len(order))
            raise ValueError(f"the orders wait on each other for ever: {stuck}")
    return events


def _input_ready(action: Action, done: dict, times: list[StageTimes]) -> float | None:
    """When the action's input is on its stage; None while its producer has not run."""
    s, m, last = action.stage, action.micro_batch, len(times) - 1
    if action.kind == "F":
        if s == 0:
            return 0.0
        end = done.get(("F", s - 1, m))
        return None if end is None else end + times[s - 1].send
    own = done.get(("F", s, m))
    if own is None or s == last:
        return own
    end = done.get(("B", s + 1, m))
    return None if end is None else max(own, end + times[s + 1].receive)


def ipu_step(times: list[StageTimes], accumulation: int) -> list[Event]:
    """The simulated IPU's pipelined training step: the simulator's own schedule function,
    whose cycles are schedule.clock_cycles over its 2N-1 pipeline stages."""
    return pipelined_step(times, accumulation, True, 0.0, 0)[0]


def bubble(events: list[Event], tracks: int) -> float:
    """The idle share of the tracks' time between the first forward and the last backward."""
    work = [e for e in events if e.kind in ("F", "B")]
    span = max(e.end for e in work) - min(e.start for e in work)
    return 1.0 - sum(e.duration for e in work) / (tracks * span)


def peak_in_flight(order: list[Action]) -> int:
    """The most micro-batches a stage has run forward but not yet backward: the activations it
    keeps for its backward passes."""
    held = peak = 0
    for action in order:
        held += 1 if action.kind == "F" else -1
        peak = max(peak, held)
    return peak


def orders_of(events: list[Event], tracks: int) -> list[list[Action]]:
    """Each track's forwards and backwards in the order they start (e.g. an IPU's, from the
    simulator's timeline)."""
    work = sorted((e for e in events if e.kind in ("F", "B")), key=lambda e: (e.start, e.kind))
    return [[Action(e.kind, e.stage, e.micro_batch) for e in work if e.ipu == track]
            for track in range(tracks)]
