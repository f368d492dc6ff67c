"""Exercises of lesson 5: sharding."""

from ... import poptorch
from ...errors import Error
from .base import Exercise, Feedback, Mistake, check_number, right, wrong
from ..plans import lesson_plan, tutorial_plan

IPUS = 4


def _check_busy_ipus(answer) -> Feedback:
    return check_number(
        answer, 1, "the IPUs busy at once under ShardedExecution",
        "one micro-batch at a time goes through the shards in turn, so only its current IPU "
        "works; the others wait.",
        typical={IPUS: "all four compute at once only in the main part of a pipeline (lesson "
                       "4); sharding passes one micro-batch from IPU to IPU, so the others wait.",
                 2: "two IPUs overlap only when two micro-batches are in flight, which is "
                    "pipelining; a sharded step finishes one micro-batch before the next."})


busy_ipus = Exercise(
    "IPUs at work", _check_busy_ipus,
    expects='a number',
    skill='read a sharded timeline',
    hint="draw the sharded timeline and look down any vertical line.",
    solution="my_busy_ipus = 1",
    mistakes=(Mistake("4", "only in the main part of a pipeline"),
              Mistake("2", "which is pipelining")))


def lesson_plans() -> dict:
    """The lesson's two plans: the tutorial's options (D 10, A 10, OutputMode.All) per strategy."""
    from ...tutorial.loops import strategy
    return {name: lesson_plan(strategy(name)) for name in ("pipelined", "sharded")}


def lesson_namespace() -> dict:
    """What the lesson defines before its exercises: `plans`, what each strategy compiled into."""
    return {"plans": lesson_plans()}


def measured_speedup() -> float:
    """Simulated sharded device time over pipelined device time, as the lesson measures it."""
    plans = lesson_plans()
    return plans["sharded"].device_seconds / plans["pipelined"].device_seconds


def _check_speedup(answer) -> Feedback:
    plans = lesson_plans()
    expected = plans["sharded"].device_seconds / plans["pipelined"].device_seconds
    whole_call = plans["sharded"].call_seconds / plans["pipelined"].call_seconds
    ipus_only = plans["sharded"].timeline.device_span() / plans["pipelined"].timeline.device_span()
    return check_number(
        answer, expected, "the speedup",
        f"pipelining is {expected:.2f}x faster here, not {IPUS}x: the stages are unbalanced and "
        f"every cycle pays for its inter-IPU copies.", tolerance=0.01,
        typical={
            1 / expected: "that is below 1: divide the sharded time by the pipelined time.",
            whole_call: "that ratio uses call_seconds, which includes the wait for the host's "
                        "data, the same for both strategies: compare plan.device_seconds.",
            ipus_only: "that is the ratio of the IPUs' work alone, as the timelines draw it; "
                       "a step also streams its inputs and outputs over the host link, the "
                       "same for both strategies: compare plan.device_seconds, which counts "
                       "them.",
            IPUS: f"{IPUS}x is the ideal for {IPUS} perfectly balanced IPUs with free copies; "
                  f"measure it from the two plans instead."})


speedup = Exercise(
    "Measure the speedup", _check_speedup,
    expects='a number',
    skill="measure pipelining's speedup from two plans",
    hint="compile both strategies with gradientAccumulation(10) and divide the two "
         "plan.device_seconds (the time the IPUs and the host link take: both runs wait "
         "equally for the host's data).",
    solution="""
my_speedup = plans["sharded"].device_seconds / plans["pipelined"].device_seconds""",
    mistakes=(
        Mistake('plans["pipelined"].device_seconds / plans["sharded"].device_seconds',
                "divide the sharded time by the pipelined time"),
        Mistake('plans["sharded"].call_seconds / plans["pipelined"].call_seconds',
                "includes the wait for the host's data"),
        Mistake("4.0", "measure it from the two plans"),
        Mistake("plans['sharded'].timeline.device_span() / "
                "plans['pipelined'].timeline.device_span()", "the IPUs' work alone")))

DEVICE_ITERATIONS = 10
WANTED = {f"B{ipu + 1}": ipu for ipu in range(IPUS)}  # B1 to B4 on IPUs 0 to 3


def _sharded_plan(options: poptorch.Options):
    """The tutorial network compiled under the learner's options (strategy included)."""
    return tutorial_plan(options._execution_strategy, options.Training.gradient_accumulation,
                         device_iterations=options.device_iterations, options=options)


def _check_sharded_options(options) -> Feedback:
    if not isinstance(options, poptorch.Options):
        return wrong(f"expected a poptorch.Options, got {type(options).__name__}.")
    if not isinstance(options._execution_strategy, poptorch.ShardedExecution):
        return wrong(f"the options run {type(options._execution_strategy).__name__}: call "
                     f"opts.setExecutionStrategy(poptorch.ShardedExecution(...)).")
    try:
        plan = _sharded_plan(options)
    except (Error, AssertionError) as error:
        return wrong(f"these options do not compile the network: {error}")
    ipus = plan.placement.ipus_acquired
    if ipus != IPUS:
        return wrong(f"the network runs on {ipus} IPU(s): give each block B1..B4 its own "
                     f"IPU, one poptorch.Stage per block.")
    placed = plan.placement.block_ipu
    misplaced = [f"{block} on IPU {placed[block]}" for block, ipu in WANTED.items()
                 if placed.get(block) != ipu]
    if misplaced:
        return wrong(f"the exercise puts B1 to B4 on IPUs 0 to 3; yours has "
                     f"{', '.join(misplaced)}: poptorch.Stage('B1').ipu(0), and so on.")
    accumulation = plan.spec.gradient_accumulation
    if accumulation != 1:
        return wrong(f"gradientAccumulation({accumulation}) compiles, but it is not the "
                     f"smallest: 2N-1 is the pipeline's rule; a sharded step runs one "
                     f"micro-batch at a time, so 1 is legal.")
    if plan.spec.device_iterations != DEVICE_ITERATIONS:
        return wrong(f"deviceIterations is {plan.spec.device_iterations}; the exercise asks for "
                     f"{DEVICE_ITERATIONS} weight updates per call.")
    return right(f"{plan.spec.strategy.text} compiles with gradient accumulation 1 and "
                 f"{DEVICE_ITERATIONS} device iterations: "
                 f"{plan.device_seconds / DEVICE_ITERATIONS * 1e6:.1f} µs per step on the IPUs.")


STAGES = ('poptorch.ShardedExecution(*[poptorch.Stage(b).ipu(i) for i, b in '
          'enumerate(["B1", "B2", "B3", "B4"])])')

sharded_options = Exercise(
    "Shard with the smallest accumulation", _check_sharded_options,
    expects='a poptorch.Options',
    skill='set up ShardedExecution with the smallest accumulation',
    hint="lesson 4's accumulation rule comes from the pipeline's fill and flush; ask yourself "
         "whether a sharded step has any to fill.",
    solution=f"""
my_options = poptorch.Options().deviceIterations(10)
my_options.setExecutionStrategy(
    poptorch.ShardedExecution(*[poptorch.Stage(b).ipu(i) for i, b in enumerate(["B1", "B2", "B3", "B4"])]))
my_options""",
    mistakes=(
        Mistake("my_options = poptorch.Options().deviceIterations(10)\n"
                "my_options.setExecutionStrategy(poptorch.ShardedExecution(*[poptorch.Stage(b)"
                ".ipu(3 - i) for i, b in enumerate(['B1', 'B2', 'B3', 'B4'])]))\nmy_options",
                "yours has B1 on IPU 3"),
        Mistake(f"my_options = poptorch.Options().deviceIterations(10)\n"
                f"my_options.Training.gradientAccumulation(7)\n"
                f"my_options.setExecutionStrategy({STAGES})\nmy_options",
                "2N-1 is the pipeline's rule"),
        Mistake("my_options = poptorch.Options().deviceIterations(10)\n"
                "my_options.Training.gradientAccumulation(7)\nmy_options",
                "call opts.setExecutionStrategy(poptorch.ShardedExecution(...))"),
        Mistake("my_options = poptorch.Options().deviceIterations(10)\n"
                "my_options.setExecutionStrategy(poptorch.ShardedExecution("
                "poptorch.Stage('B1', 'B2', 'B3', 'B4').ipu(0)))\nmy_options",
                "runs on 1 IPU(s)"),
        Mistake(f"my_options = poptorch.Options()\n"
                f"my_options.setExecutionStrategy({STAGES})\nmy_options",
                "deviceIterations is 1"),
    ),
    writes_code=True)
