"""Exercises of lesson 3: blocks and stages."""
import torch

from ... import poptorch
from ...errors import Error
from ...tutorial.models import ThreeBlocks
from .base import Exercise, Feedback, Mistake, check_number, right, wrong
from ..plans import tutorial_plan

WANTED = {"B1": 0, "B2": 0, "B3": 1, "B4": 1}


def _check_two_ipus(strategy) -> Feedback:
    """Judged by where each block runs: consecutive stages on one IPU are as good as one."""
    if type(strategy) is not poptorch.PipelinedExecution:  # ShardedExecution derives from it
        return wrong(f"expected a poptorch.PipelinedExecution, got {type(strategy).__name__}.")
    try:
        plan = tutorial_plan(strategy, accumulation=3)
    except (Error, AssertionError) as error:
        return wrong(f"the strategy does not compile: {error}")
    placed = plan.placement.block_ipu
    if len(set(placed.values())) != 2:
        return wrong(f"that strategy puts the blocks on {len(set(placed.values()))} IPU(s); "
                     f"the exercise asks for two: give each Stage an .ipu(...) of 0 or 1.")
    if all(placed[b] == 1 - ipu for b, ipu in WANTED.items()):
        return wrong("the two IPUs are swapped: the model's first blocks go on the IPU the "
                     "pipeline starts from, IPU 0.")
    misplaced = [f"{b} is on IPU {placed[b]}, not IPU {ipu}" for b, ipu in WANTED.items()
                 if placed[b] != ipu]
    if misplaced:
        return wrong("; ".join(misplaced) + ".")
    return right(f"the blocks run where the exercise asks: "
                 f"{plan.placement.describe().replace(chr(10), '; ')}.")


two_ipus = Exercise(
    "Two IPUs", _check_two_ipus,
    expects='a poptorch.PipelinedExecution',
    skill='place blocks on IPUs with Stage and ipu()',
    hint="a Stage can hold several blocks: poptorch.Stage(\"B1\", \"B2\").ipu(0).",
    solution="""
my_strategy = poptorch.PipelinedExecution(
    poptorch.Stage("B1", "B2").ipu(0),
    poptorch.Stage("B3", "B4").ipu(1),
)""",
    mistakes=(
        Mistake('poptorch.PipelinedExecution(poptorch.Stage("B1", "B2", "B3").ipu(0), '
                'poptorch.Stage("B4").ipu(1))', "B3 is on IPU 0, not IPU 1"),
        Mistake('poptorch.PipelinedExecution(poptorch.Stage("B1", "B2").ipu(1), '
                'poptorch.Stage("B3", "B4").ipu(0))', "the two IPUs are swapped"),
        Mistake('poptorch.PipelinedExecution(poptorch.Stage("B1", "B2", "B3", "B4").ipu(0))',
                "on 1 IPU(s)"),
        Mistake('poptorch.ShardedExecution(poptorch.Stage("B1", "B2").ipu(0), '
                'poptorch.Stage("B3", "B4").ipu(1))', "expected a poptorch.PipelinedExecution"),
    ),
    writes_code=True)


MOVED = {"A": 0, "B": 1, "C": 1}  # exercise 3.2: ThreeBlocks([0, 1, 0]) with C moved to IPU 1


def _check_moved_block(strategy) -> Feedback:
    """Judged by where each block of ThreeBlocks([0, 1, 0]) runs under the strategy."""
    if type(strategy) is not poptorch.PipelinedExecution:  # ShardedExecution derives from it
        return wrong(f"expected a poptorch.PipelinedExecution, got {type(strategy).__name__}.")
    opts = poptorch.Options().deviceIterations(4).showCompilationProgressBar(False)
    model = poptorch.inferenceModel(ThreeBlocks([0, 1, 0]), opts.setExecutionStrategy(strategy))
    try:
        model.compile(torch.randn(8, 16))
    except (Error, AssertionError) as error:
        return wrong(f"the strategy does not compile: {type(error).__name__}: {error}")
    placed = model.plan.placement.block_ipu
    misplaced = [f"{b} runs on IPU {placed[b]}, not IPU {ipu}" for b, ipu in MOVED.items()
                 if placed[b] != ipu]
    if misplaced:
        hint = (" A block keeps its ipu_id unless a Stage that holds it names another with "
                ".ipu(...)." if placed["C"] == 0 else "")
        return wrong("; ".join(misplaced) + "." + hint)
    return right("A runs on IPU 0, B and C on IPU 1: a Stage's .ipu(...) overrides the ipu_id of "
                 "the blocks it holds, and the stages ascend along the model.")


move_a_block = Exercise(
    "Move a block with a stage", _check_moved_block,
    expects='a poptorch.PipelinedExecution',
    skill="override a block's ipu_id with a Stage",
    hint="name the blocks in Stages yourself: a Stage can hold two blocks, and its .ipu(...) "
         "decides where they run.",
    solution="""
my_strategy = poptorch.PipelinedExecution(
    poptorch.Stage("A").ipu(0),
    poptorch.Stage("B", "C").ipu(1),
)""",
    mistakes=(
        Mistake("poptorch.PipelinedExecution(poptorch.AutoStage.AutoIncrement)",
                "C runs on IPU 0, not IPU 1"),
        Mistake('poptorch.PipelinedExecution(poptorch.Stage("A", "C").ipu(0), '
                'poptorch.Stage("B").ipu(1))', "does not compile"),
        Mistake('poptorch.PipelinedExecution(poptorch.Stage("A").ipu(1), '
                'poptorch.Stage("B", "C").ipu(0))', "A runs on IPU 1, not IPU 0"),
        Mistake('poptorch.ShardedExecution(poptorch.Stage("A").ipu(0), '
                'poptorch.Stage("B", "C").ipu(1))', "expected a poptorch.PipelinedExecution"),
    ),
    writes_code=True)

IPUS_PER_REPLICA, REPLICAS = 3, 2


def _check_ipus_reserved(answer) -> Feedback:
    used = IPUS_PER_REPLICA * REPLICAS
    reserved = 1 << (used - 1).bit_length()  # autoRoundNumIPUs: the next power of two
    return check_number(
        answer, reserved, "the IPUs reserved",
        f"{IPUS_PER_REPLICA} IPUs per replica x {REPLICAS} replicas = {used}, rounded up to the "
        f"next power of two: {reserved} ({reserved - used} reserved and idle).",
        typical={
            used: f"{used} IPUs do the work, but autoRoundNumIPUs(True) rounds the reservation "
                  f"up to a power of two.",
            IPUS_PER_REPLICA: f"that is one replica: replicationFactor({REPLICAS}) runs "
                              f"{REPLICAS} copies of the model, each on its own IPUs.",
            4: f"that rounds up one replica's {IPUS_PER_REPLICA} IPUs; multiply by the "
               f"{REPLICAS} replicas first, then round the total up to a power of two.",
        })


ipus_reserved = Exercise(
    "How many IPUs?", _check_ipus_reserved,
    expects='a number',
    skill='count the IPUs a run reserves (replicas, rounding)',
    hint="IPUs per replica x replication factor, then autoRoundNumIPUs rounds up to a power of two.",
    solution="my_ipu_count = 8  # 3 IPUs per replica x 2 replicas = 6, rounded up to a power of two",
    mistakes=(Mistake("6", "rounds the reservation up to a power of two"),
              Mistake("3", "is one replica"),
              Mistake("4", "multiply by the 2 replicas first")))
