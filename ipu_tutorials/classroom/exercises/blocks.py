"""Exercises of lesson 3: blocks and stages."""
from ... import poptorch
from ...errors import Error
from .base import Exercise, Feedback, check_number, right, wrong
from ..plans import tutorial_plan

WANTED = {"B1": 0, "B2": 0, "B3": 1, "B4": 1}


def _check_two_ipus(strategy) -> Feedback:
    if not isinstance(strategy, poptorch.PipelinedExecution):
        return wrong(f"expected a poptorch.PipelinedExecution, got {type(strategy).__name__}.")
    try:
        plan = tutorial_plan(strategy, accumulation=3)
    except Error as error:
        return wrong(f"the strategy does not compile: {error}")
    placed = plan.placement.block_ipu
    misplaced = [f"{b} is on IPU {placed[b]}, not IPU {ipu}" for b, ipu in WANTED.items()
                 if placed[b] != ipu]
    if misplaced:
        return wrong("; ".join(misplaced) + ".")
    return right(f"two stages, {plan.placement.describe().replace(chr(10), '; ')}.")


two_ipus = Exercise(
    "Two IPUs", _check_two_ipus,
    hint="a Stage can hold several blocks: poptorch.Stage(\"B1\", \"B2\").ipu(0).",
    solution="""
strategy = poptorch.PipelinedExecution(
    poptorch.Stage("B1", "B2").ipu(0),
    poptorch.Stage("B3", "B4").ipu(1),
)""")


def _check_auto_stage(answer) -> Feedback:
    if answer is poptorch.AutoStage.AutoIncrement:
        return right("AutoIncrement gives each block its own stage (0, 1, 2) in the order the "
                     "model runs them, so the stage ids ascend even though the IPUs go 0, 1, 0.")
    if answer is poptorch.AutoStage.SameAsIpu:
        return wrong("SameAsIpu is the rule that failed: it makes block C's stage 0, after B's "
                     "stage 1.")
    return wrong(f"answer with a poptorch.AutoStage member, got {answer!r}.")


fix_descending_stages = Exercise(
    "Fix the descending stages", _check_auto_stage,
    hint="one AutoStage rule numbers stages by IPU, the other counts blocks as they run.",
    solution="poptorch.AutoStage.AutoIncrement")


ipus_reserved = Exercise(
    "How many IPUs?",
    lambda answer: check_number(
        answer, 8, "the IPUs reserved",
        "3 IPUs per replica x 2 replicas = 6, rounded up to the next power of two: 8 "
        "(2 reserved and idle)."),
    hint="IPUs per replica x replication factor, then autoRoundNumIPUs rounds up to a power of two.",
    solution="8")
