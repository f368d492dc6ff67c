"""Exercises of lesson 4: pipelining."""
from ... import poptorch
from ...errors import Error
from .base import Exercise, Feedback, Mistake, check_number, right, wrong
from ..plans import lesson_plan

IPUS = 4
MICRO_BATCH, DEVICE_ITERATIONS, ACCUMULATION, REPLICAS = 40, 10, 10, 2


def _check_smallest_accumulation(answer) -> Feedback:
    stages = 2 * IPUS - 1
    return check_number(
        answer, stages, f"{IPUS} pipelined IPUs",
        f"training on N = {IPUS} IPUs runs 2N-1 = {stages} pipeline stages ({IPUS} forward, "
        f"the last merged with the first backward, {IPUS - 1} more backward), and each needs a "
        f"micro-batch of its own.",
        typical={
            IPUS: "that is the forward stages only (enough for inference); training also runs "
                  "the backward pass back down the IPUs: count 2N-1 stages.",
            2 * IPUS: "the loss and the first backward stage run on the last IPU in one stage: "
                      "do not count the loss as a stage of its own (2N-1, not 2N).",
            2 * IPUS - 2: "that is the number of fill plus flush cycles (2N-2), not the pipeline "
                          "stages: a training pipeline has 2N-1 stages.",
        })


smallest_accumulation = Exercise(
    "The smallest gradient accumulation", _check_smallest_accumulation,
    expects='a number',
    skill='the 2N-1 gradient-accumulation rule of a training pipeline',
    hint="count the pipeline stages of a training step: forward up the IPUs, then backward down.",
    solution="my_accumulation = 7  # 2N - 1 with N = 4",
    mistakes=(Mistake("4", "training also runs the backward pass"),
              Mistake("8", "do not count the loss as a stage of its own"),
              Mistake("6", "fill plus flush cycles")))


def _check_combined_batch(answer) -> Feedback:
    images = MICRO_BATCH * DEVICE_ITERATIONS * ACCUMULATION * REPLICAS
    return check_number(
        answer, images, "the combined batch size",
        f"{MICRO_BATCH} x {DEVICE_ITERATIONS} device iterations x {ACCUMULATION} micro-batches x "
        f"{REPLICAS} replicas = {images:,} images per call.",
        typical={
            images // REPLICAS: f"each of the {REPLICAS} replicas takes its own share of every "
                                f"call: multiply by the replicationFactor too.",
            images // DEVICE_ITERATIONS: f"one of the 10s is missing: each call runs "
                                         f"{DEVICE_ITERATIONS} device iterations (weight updates), "
                                         f"each of {ACCUMULATION} accumulated micro-batches.",
            MICRO_BATCH: "that is one micro-batch; the counts that repeat it multiply it.",
            MICRO_BATCH * DEVICE_ITERATIONS * ACCUMULATION // REPLICAS:
                "replicas do not split the batch you give: each replica takes its own "
                "micro-batches, so multiply by the replicationFactor, do not divide.",
        })


combined_batch = Exercise(
    "Images per call", _check_combined_batch,
    expects='a number',
    skill='compute the combined batch of a call',
    hint="multiply the micro-batch by every count that repeats it: device iterations, "
         "gradient accumulation and replicas.",
    solution="my_images_per_call = 40 * 10 * 10 * 2  # = 8000",
    mistakes=(Mistake("40 * 10 * 10", "multiply by the replicationFactor too"),
              Mistake("40 * 10 * 2", "one of the 10s is missing"),
              Mistake("40 * 10 * 10 / 2", "do not divide")))

MARGIN = 0.05  # splits this close to the fastest are balanced as well as whole blocks allow
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
    """Judged by the step time of the learner's placement against the fastest split, with
    MARGIN for near-ties: the slowest stage sets the pace, so only the split matters (two
    consecutive stages on one IPU are as good as one)."""
    if type(strategy) is not poptorch.PipelinedExecution:  # ShardedExecution derives from it
        return wrong(f"expected a poptorch.PipelinedExecution over IPUs 0 and 1, got "
                     f"{type(strategy).__name__}.")
    try:
        plan = lesson_plan(strategy)
    except (Error, AssertionError) as error:
        return wrong(f"the strategy does not compile: {error}")
    placed = plan.placement.block_ipu
    if sorted(set(placed.values())) != [0, 1]:
        return wrong(f"the blocks run on IPU(s) {sorted(set(placed.values()))}: the exercise "
                     f"balances a pipeline over IPUs 0 and 1.")
    if len(plan.placement.stages) != 2:  # consecutive stages on one IPU merge into one
        return wrong(f"that pipeline has {len(plan.placement.stages)} stages "
                     f"({plan.placement.describe().replace(chr(10), '; ')}): the exercise cuts "
                     f"the four blocks once, into two stages, one per IPU.")
    best = min((_two_ipu_plan(*split) for split in SPLITS), key=_step_seconds)
    if _step_seconds(plan) <= _step_seconds(best) * (1 + MARGIN):
        return right(f"{_step_seconds(plan) * 1e6:.1f} µs per step, the fastest split: "
                     f"{_shares(plan)}.")
    heavy = max(zip(plan.placement.stages, plan.stage_costs),
                key=lambda sc: sc[1].forward + sc[1].backward)
    return wrong(f"{_step_seconds(plan) * 1e6:.1f} µs per step against "
                 f"{_step_seconds(best) * 1e6:.1f} µs for the best split. {_shares(plan)}: "
                 f"move a block off IPU {heavy[0].ipu}.")


balance_two_ipus = Exercise(
    "Balance the pipeline", _check_balance,
    expects='a poptorch.PipelinedExecution',
    skill='balance pipeline stages by their work',
    hint="the slowest stage sets the pace of every cycle: look at each stage's share of the work "
         "in training_model.plan.stage_costs, and give the two IPUs similar shares.",
    solution="""
my_split = poptorch.PipelinedExecution(
    poptorch.Stage("B1", "B2").ipu(0),
    poptorch.Stage("B3", "B4").ipu(1),
)""",
    mistakes=(
        Mistake('poptorch.PipelinedExecution(poptorch.Stage("B1", "B2", "B3").ipu(0), '
                'poptorch.Stage("B4").ipu(1))', "move a block off IPU 0"),
        Mistake('poptorch.PipelinedExecution(poptorch.Stage("B1").ipu(0), '
                'poptorch.Stage("B2", "B3", "B4").ipu(1))', "move a block off IPU 1"),
        Mistake('poptorch.PipelinedExecution(poptorch.Stage("B3", "B4").ipu(0), '
                'poptorch.Stage("B1", "B2").ipu(1))', "must ascend along the model"),
        Mistake('poptorch.PipelinedExecution(poptorch.Stage("B1", "B2", "B3", "B4").ipu(0))',
                "over IPUs 0 and 1"),
        Mistake('poptorch.PipelinedExecution(poptorch.Stage("B1").ipu(0), '
                'poptorch.Stage("B2", "B3").ipu(1), poptorch.Stage("B4").ipu(0))',
                "that pipeline has 3 stages"),
    ),
    writes_code=True)
