"""Exercises of lesson 3: sharding."""
from ... import poptorch
from .base import Exercise, Feedback, check_number, wrong
from ..plans import tutorial_plan

busy_ipus = Exercise(
    "IPUs at work",
    lambda answer: check_number(
        answer, 1, "the IPUs busy at once under ShardedExecution",
        "one micro-batch at a time goes through the shards in turn, so only its current IPU "
        "works; the others wait."),
    hint="draw the sharded timeline and look down any vertical line.",
    solution="1")


def measured_speedup(accumulation: int = 10) -> float:
    """Simulated sharded time over pipelined time for the tutorial CNN on 4 IPUs."""
    blocks = ("B1", "B2", "B3", "B4")
    piped = tutorial_plan(poptorch.PipelinedExecution(*blocks), accumulation=accumulation)
    sharded = tutorial_plan(poptorch.ShardedExecution(*blocks), accumulation=accumulation)
    return sharded.call_seconds / piped.call_seconds


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
         "plan.call_seconds.",
    solution="""
sharded_model.plan.call_seconds / pipelined_model.plan.call_seconds""")
