"""Exercises of lesson 4: pipelining."""
from ... import poptorch
from ...errors import Error
from .base import Exercise, Feedback, check_number, right, wrong
from ..plans import lesson_plan

smallest_accumulation = Exercise(
    "The smallest gradient accumulation",
    lambda answer: check_number(
        answer, 7, "4 pipelined IPUs",
        "training on N = 4 IPUs runs 2N-1 = 7 pipeline stages (4 forward, the last merged with "
        "the first backward, 3 more backward), and each needs a micro-batch of its own."),
    hint="count the pipeline stages of a training step: forward up the IPUs, then backward down.",
    solution="7  # 2N - 1 with N = 4")

combined_batch = Exercise(
    "Images per call",
    lambda answer: check_number(
        answer, 8000, "the combined batch size",
        "40 x 10 device iterations x 10 micro-batches x 2 replicas = 8,000 images per call."),
    hint="multiply the micro-batch by every count that repeats it: device iterations, "
         "gradient accumulation and replicas.",
    solution="40 * 10 * 10 * 2  # = 8000")

SPLITS = [(["B1"], ["B2", "B3", "B4"]), (["B1", "B2"], ["B3", "B4"]), (["B1", "B2", "B3"], ["B4"])]


def _two_ipu_plan(first, second):
    return lesson_plan(poptorch.PipelinedExecution(poptorch.Stage(*first).ipu(0),
                                                   poptorch.Stage(*second).ipu(1)))


def _step_seconds(plan) -> float:
    """Device time of one step (a call holds device_iterations steps), as the lesson prints it."""
    return plan.device_seconds / plan.config.device_iterations


def _shares(plan) -> str:
    work = [c.forward + c.backward for c in plan.stage_costs]
    return "; ".join(f"IPU {s.ipu} ({', '.join(s.blocks)}) does {w / sum(work):.0%} of the work"
                     for s, w in zip(plan.placement.stages, work))


def _check_balance(strategy) -> Feedback:
    if not isinstance(strategy, poptorch.PipelinedExecution) or not strategy.stages \
            or len(strategy.stages) != 2:
        return wrong("expected a PipelinedExecution of two Stages, on IPUs 0 and 1.")
    try:
        plan = lesson_plan(strategy)
    except Error as error:
        return wrong(f"the strategy does not compile: {error}")
    best = min((_two_ipu_plan(*split) for split in SPLITS), key=_step_seconds)
    if _step_seconds(plan) <= _step_seconds(best) * (1 + 1e-9):
        return right(f"{_step_seconds(plan) * 1e6:.1f} µs per step, the fastest split: "
                     f"{_shares(plan)}.")
    heavy = max(zip(plan.placement.stages, plan.stage_costs), key=lambda sc: sc[1].forward + sc[1].backward)
    return wrong(f"{_step_seconds(plan) * 1e6:.1f} µs per step against "
                 f"{_step_seconds(best) * 1e6:.1f} "
                 f"µs for the best split. {_shares(plan)}: move a block off IPU {heavy[0].ipu}.")


balance_two_ipus = Exercise(
    "Balance the pipeline", _check_balance,
    hint="the slowest stage sets the pace of every cycle: look at each stage's share of the work "
         "in training_model.plan.stage_costs, and give the two IPUs similar shares.",
    solution="""
strategy = poptorch.PipelinedExecution(
    poptorch.Stage("B1", "B2").ipu(0),
    poptorch.Stage("B3", "B4").ipu(1),
)""")
