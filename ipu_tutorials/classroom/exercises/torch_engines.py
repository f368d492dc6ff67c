"""Exercises of lesson 16: PyTorch's own engines beside the simulated IPU."""
from __future__ import annotations

import math

from ... import poptorch
from ...errors import Error
from ...profiling.diagrams import unit_stages
from ...tutorial.loops import strategy
from ...tutorial.models import Network
from ...torch_engines.partition import (RTS_MIN_ELEMENTS, even_state_bytes,
                                                 rts_state_bytes, zero_partition, zero_state_bytes)
from ...torch_engines.schedules import (bubble, ipu_step, orders_of, peak_in_flight,
                                                 replay, torch_orders)
from ..plans import tutorial_plan
from .base import Exercise, Feedback, Mistake, as_number, check_number, right, wrong

STAGES = 4  # lesson 4's split: one block per IPU, one stage per process
MOST_IDLE = 0.20  # the idle share both sides may have
MOST_HELD = 4  # micro-batches whose activations stage 0 may keep (the GPU's memory)


def lesson_namespace() -> dict:
    """What the lesson defines before its exercises: torch's two schedules and `exercises`."""
    import sys

    from torch.distributed.pipelining import Schedule1F1B, ScheduleGPipe
    return {"Schedule1F1B": Schedule1F1B, "ScheduleGPipe": ScheduleGPipe, "Network": Network,
            "exercises": sys.modules[__name__]}


def _schedule_name(schedule) -> str | None:
    from torch.distributed.pipelining import Schedule1F1B, ScheduleGPipe
    return {ScheduleGPipe: "GPipe", Schedule1F1B: "1F1B"}.get(schedule)


def _torch_side(name: str, micro_batches: int) -> tuple[str, Feedback | None]:
    """What torch's side does with the counts: (explanation, a Not yet or None)."""
    p, m = STAGES, micro_batches
    try:
        orders = torch_orders(name, p, m)
    except ValueError as error:
        return "", wrong(f"torch refuses it: Schedule{name}: {error} 1F1B runs a forward on "
                         f"every stage before the first backward comes back.")
    idle, held = bubble(replay(orders, unit_stages(p)), p), peak_in_flight(orders[0])
    said = (f"torch Schedule{name} with {m} micro-batches is idle (P-1)/(M+P-1) = "
            f"{p - 1}/{m + p - 1} = {idle:.0%} of the time, and stage 0 keeps the activations of "
            f"{held} micro-batches")
    if held > MOST_HELD:
        return said, wrong(f"{said}: GPipe keeps stage 0's activations of every micro-batch "
                           f"until the backwards start, more than the {MOST_HELD} that fit; 1F1B "
                           f"starts backwards early and keeps at most P = {p}.")
    if idle > MOST_IDLE + 1e-9:
        return said, wrong(f"{said}: more than {MOST_IDLE:.0%} idle. The fill and drain cost "
                           f"P-1 stage-times whatever M is: more micro-batches shrink their share.")
    return said, None


def _ipu_side(options) -> tuple[str, Feedback | None]:
    """What the simulated IPUs do with the options on lesson 4's model."""
    if not isinstance(options, poptorch.Options):
        return "", wrong(f"the IPU side should be a poptorch.Options, got "
                         f"{type(options).__name__}.")
    if type(options._execution_strategy) is not poptorch.PipelinedExecution:  # not Sharded
        return "", wrong(f"the options run {type(options._execution_strategy).__name__}: the IPUs "
                         f"would take turns, one block at a time, with no pipeline to fill. Keep "
                         f"PipelinedExecution (poptorch.Options' default), as lesson 4 does.")
    a = options.Training.gradient_accumulation
    try:
        tutorial_plan(strategy("pipelined"), accumulation=a, options=options)
    except (Error, AssertionError) as error:
        return "", wrong(f"PopTorch refuses the options on lesson 4's 4 pipelined IPUs: {error}")
    n = STAGES
    events = ipu_step(unit_stages(n), a)
    idle, held = bubble(events, n), peak_in_flight(orders_of(events, n)[0])
    said = (f"the IPUs with gradientAccumulation({a}) run 2N-1 = {2 * n - 1} pipeline stages in "
            f"A+2N-2 = {a + 2 * n - 2} cycles; only the first N-1 = {n - 1} run forwards alone and "
            f"the last {n - 1} backwards alone, so those are short, and the IPUs are idle "
            f"{idle:.0%} of the time (IPU 0 stashes {held} micro-batches' inputs and recomputes)")
    if idle > MOST_IDLE + 1e-9:
        return said, wrong(f"{said}: more than {MOST_IDLE:.0%}; a larger gradient accumulation "
                           f"shrinks the fill and flush share, as micro-batches do on torch.")
    return said, None


def _check_schedule(schedule, micro_batches, options) -> Feedback:
    name = _schedule_name(schedule)
    if name is None:
        return wrong(f"the torch side should be the class ScheduleGPipe or Schedule1F1B (from "
                     f"torch.distributed.pipelining), got {schedule!r}.")
    m = as_number(micro_batches)
    if m is None or not math.isfinite(m) or m != int(m) or m < 1:
        return wrong(f"the micro-batch count should be a whole number of at least 1, got "
                     f"{micro_batches!r}.")
    m = int(m)
    torch_said, torch_wrong = _torch_side(name, m)
    if torch_wrong is not None:
        return torch_wrong
    ipu_said, ipu_wrong = _ipu_side(options)
    if ipu_wrong is not None:
        return ipu_wrong
    return right(f"{torch_said}; {ipu_said}. With every stage alike, both idle shares are "
                 f"(P-1)/(M+P-1): the bubble depends on the micro-batch count, not on who runs it.")


pick_a_schedule = Exercise(
    "Pick a schedule on both sides", _check_schedule,
    expects="a torch schedule class, a micro-batch count and a poptorch.Options",
    skill="choose a pipeline schedule and micro-batch count for a bubble and a memory budget",
    hint="both sides lose (P-1)/(M+P-1) of their time to fill and drain when every stage takes "
         "as long; solve for M. Then ask which torch schedule keeps fewer micro-batches' "
         "activations on stage 0 (the orders printed above show when each one starts its "
         "backwards), and what PopTorch needs at least.",
    starting_code="""
my_options = poptorch.Options()  # set what the IPUs need
my_schedule = ...  # ScheduleGPipe or Schedule1F1B
my_micro_batches = ...  # your answer""",
    solution="""
options = poptorch.Options()
options.Training.gradientAccumulation(12)  # 3 / (12 + 3) = 20% idle, and at least 2N-1 = 7
my_schedule, my_micro_batches, my_options = Schedule1F1B, 12, options""",
    mistakes=(
        Mistake("o = poptorch.Options()\no.Training.gradientAccumulation(12)\n"
                "exercises.pick_a_schedule.check(ScheduleGPipe, 12, o)", "GPipe keeps stage 0's"),
        Mistake("o = poptorch.Options()\no.Training.gradientAccumulation(12)\n"
                "exercises.pick_a_schedule.check(Schedule1F1B, 10, o)", "more micro-batches"),
        Mistake("o = poptorch.Options()\no.Training.gradientAccumulation(7)\n"
                "exercises.pick_a_schedule.check(Schedule1F1B, 12, o)",
                "larger gradient accumulation"),
        Mistake("o = poptorch.Options()\no.Training.gradientAccumulation(12)\n"
                "exercises.pick_a_schedule.check(Schedule1F1B, 3, o)", "torch refuses it"),
        Mistake("o = poptorch.Options()\no.Training.gradientAccumulation(6)\n"
                "exercises.pick_a_schedule.check(Schedule1F1B, 12, o)", "PopTorch refuses"),
    ),
    writes_code=True)


SGD_BYTES = 4  # torch.optim.SGD(momentum=...) keeps one momentum buffer, a copy of the gradient


def _check_fullest_rank(answer) -> Feedback:
    net, ranks = Network(), STAGES
    adamw = max(zero_state_bytes(net, ranks))
    expected = adamw // 2  # one float32 buffer per element, where AdamW keeps two
    biggest = zero_partition({n: p.numel() for n, p in net.named_parameters()}, ranks)[0]
    return check_number(
        answer, expected, "the fullest rank's SGD momentum",
        f"ZeroRedundancyOptimizer hands out whole parameters, largest first, to the emptiest "
        f"rank, whatever the optimizer: rank 0 gets {', '.join(biggest)} alone, and SGD's one "
        f"float32 momentum buffer per element makes {expected:,} bytes (AdamW's two moments, in "
        f"the table above, make twice that).",
        typical={
            adamw: "that is AdamW's state, two float32 moments per element: SGD with momentum "
                   "keeps one buffer.",
            even_state_bytes(net, ranks) // 2: "that is an even split of every tensor, what "
                                               "fully_shard gives near enough; "
                                               "ZeroRedundancyOptimizer keeps each parameter "
                                               "whole.",
            ranks * even_state_bytes(net, ranks) // 2: "that is the whole state, what every "
                                                       "rank would hold without sharding.",
            expected // SGD_BYTES: "that is elements; each momentum element is a 4-byte float32.",
        })


zero_fullest_rank = Exercise(
    "The fullest rank with SGD", _check_fullest_rank,
    expects="a number of bytes",
    skill="predict ZeroRedundancyOptimizer's partition of optimizer state",
    hint="the partition does not depend on the optimizer: the fullest rank is the one in the "
         "table above; count 4 bytes of momentum per element of what it holds.",
    solution="my_bytes = 4 * Network().layer3.weight.numel()  # 327,680: layer3's weight alone",
    mistakes=(Mistake("2 * 4 * Network().layer3.weight.numel()", "that is AdamW's state"),
              Mistake("4 * sum(p.numel() for p in Network().parameters()) // 4",
                      "what fully_shard gives"),
              Mistake("Network().layer3.weight.numel()", "that is elements")))
