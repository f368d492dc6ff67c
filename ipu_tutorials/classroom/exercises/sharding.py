"""Exercises of lesson 5: sharding."""
from ... import poptorch
from .base import Exercise, Feedback, check_number, wrong
from ..plans import lesson_plan

busy_ipus = Exercise(
    "IPUs at work",
    lambda answer: check_number(
        answer, 1, "the IPUs busy at once under ShardedExecution",
        "one micro-batch at a time goes through the shards in turn, so only its current IPU "
        "works; the others wait."),
    hint="draw the sharded timeline and look down any vertical line.",
    solution="1")


def lesson_plans() -> dict:
    """The lesson's two plans: the tutorial's options (D 10, A 10, OutputMode.All) per strategy."""
    from ...tutorial.loops import strategy
    return {name: lesson_plan(strategy(name)) for name in ("pipelined", "sharded")}


def measured_speedup() -> float:
    """Simulated sharded device time over pipelined device time, as the lesson measures it."""
    plans = lesson_plans()
    return plans["sharded"].device_seconds / plans["pipelined"].device_seconds


def _check_speedup(answer) -> Feedback:
    expected = measured_speedup()
    if isinstance(answer, (int, float)) and answer < 1:
        return wrong(f"{answer:.3f} is below 1: divide the sharded time by the pipelined time.")
    return check_number(answer, expected, "the speedup",
                        f"pipelining is {expected:.2f}x faster here, not 4x: the stages are "
                        f"unbalanced and every cycle pays for its inter-IPU copies.",
                        tolerance=0.01)


speedup = Exercise(
    "Measure the speedup", _check_speedup,
    hint="compile both strategies with gradientAccumulation(10) and divide the two "
         "plan.device_seconds (the time the IPUs and the host link take: both runs wait "
         "equally for the host's data).",
    solution="""
models["sharded"].plan.device_seconds / models["pipelined"].plan.device_seconds""")
