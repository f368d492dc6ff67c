"""Exercises of lesson 6: phased execution."""
from __future__ import annotations

import functools

from ... import poptorch
from ...errors import Error
from ...simulator.units import format_bytes
from .. import phased_plans as lesson
from .base import Exercise, Feedback, Mistake, right, wrong

WIDTH, LAYERS, CHUNKS = 1536, 16, 16  # the lesson's model: one block per layer
PHASED = (poptorch.SerialPhasedExecution, poptorch.ParallelPhasedExecution)


def lesson_namespace() -> dict:
    """The names the lesson defines before its exercises."""
    return {"model": lesson.chunked_model(WIDTH, LAYERS, CHUNKS), "lesson": lesson}


def _fullest(outcome: lesson.Outcome):
    return max(outcome.memory.ipus, key=lambda m: m.total - m.capacity)


def _why_not_phased(strategy) -> Feedback:
    if isinstance(strategy, (poptorch.PipelinedExecution, poptorch.ShardedExecution)):
        return wrong(f"{type(strategy).__name__} keeps every weight, gradient and optimizer "
                     f"state on chip for the whole run, which is what does not fit; give a "
                     f"SerialPhasedExecution or ParallelPhasedExecution, whose weights stream "
                     f"in phase by phase.")
    return wrong(f"give the strategy object (poptorch.SerialPhasedExecution(...) or "
                 f"poptorch.ParallelPhasedExecution(...)), not {type(strategy).__name__}.")


def _placement_feedback(error: Error) -> Feedback:
    message = str(error)
    if "odd phases on odd IPUs" in message or "even phases on even IPUs" in message:
        return wrong(f"ParallelPhasedExecution runs even phases on even IPUs and odd phases on "
                     f"odd IPUs, so one group loads while the other computes: {message}")
    if message.startswith("Unknown Block"):
        return wrong(f"every block must be in a phase (16 blocks, chunk0 to chunk15): {message}")
    if "failed to acquire" in message:
        return wrong(f"the lesson's system has {lesson.IPUS} IPUs: use IPU ids 0 to "
                     f"{lesson.IPUS - 1}. {message}")
    return wrong(message)


def _out_of_memory_feedback(strategy, outcome: lesson.Outcome) -> Feedback:
    worst = _fullest(outcome)
    over = (f"IPU {worst.ipu} needs {format_bytes(worst.total)} of "
            f"{format_bytes(worst.capacity)}")
    crowded = [stage for phase in strategy._phases for stage in phase.stages
               if len(stage.blocks) > 1]
    if crowded:
        return wrong(f"{over}: {crowded[0]!r} is one Stage holding {len(crowded[0].blocks)} "
                     f"layers on one IPU. A Phase made of block ids (Phase(\"chunk0\", "
                     f"\"chunk1\")) is a single Stage; give one poptorch.Stage per block so a "
                     f"phase spreads over the IPUs.")
    liveness = getattr(strategy, "_tensors_liveness", None)  # PopTorch keeps it private
    if isinstance(strategy, poptorch.SerialPhasedExecution) and liveness in (
            poptorch.Liveness.AlwaysLive, poptorch.Liveness.OffChipAfterFwd):
        return wrong(f"{over}: with Liveness.{liveness.name} each IPU holds the phase "
                     f"it runs, the one it is storing and the one it is loading. Call "
                     f".setTensorsLiveness(poptorch.Liveness.OffChipAfterFwdNoOverlap) (or "
                     f"OffChipAfterEachPhase) so fewer phases share the chip.")
    return wrong(f"{over}: each phase holds too much; put fewer layers in each stage (more "
                 f"phases), or a stricter Liveness.")


def _check_phases(strategy) -> Feedback:
    if not isinstance(strategy, PHASED):
        return _why_not_phased(strategy)
    try:
        outcome = lesson.plan_model(lesson.chunked_model(WIDTH, LAYERS, CHUNKS), strategy)
    except (Error, AssertionError) as error:
        return _placement_feedback(error)
    if not outcome.fits:
        return _out_of_memory_feedback(strategy, outcome)
    plan, fullest = outcome.plan, max(outcome.memory.ipus, key=lambda m: m.total)
    used = plan.placement.ipus_per_replica
    return right(f"it compiles and fits on {used} IPU(s) (fullest: IPU {fullest.ipu} at "
                 f"{fullest.utilisation:.0%}); a step of {lesson.ACCUMULATION} micro-batches "
                 f"takes {plan.call_seconds * 1e3:,.1f} ms, "
                 f"{lesson.streaming_seconds(plan) * 1e3:,.1f} ms of it streaming.")


# Four phases of four stages, each stage on its own IPU. Stage.ipu() returns the stage in PopTorch,
# so it chains; Phase.ipus() returns None there, so it does not.
_SERIAL_PHASES = ("*[poptorch.Phase(*[poptorch.Stage(f\"chunk{4 * p + i}\").ipu(i) "
                  "for i in range(4)]) for p in range(4)]")

write_the_phases = Exercise(
    "Phases for a model too big for four IPUs", _check_phases,
    expects='a poptorch.SerialPhasedExecution or ParallelPhasedExecution',
    skill='write phases and a liveness that fit a model too big for the IPUs',
    hint="One poptorch.Stage per block, four stages per phase (one per IPU, named with "
         ".ipu(i)), four phases; the default liveness holds three phases on chip at once: "
         "setTensorsLiveness() can lower that.",
    solution="""
phases = [poptorch.Phase(*[poptorch.Stage(f"chunk{4 * p + i}").ipu(i) for i in range(4)])
          for p in range(4)]
strategy = poptorch.SerialPhasedExecution(*phases)
strategy.setTensorsLiveness(poptorch.Liveness.OffChipAfterFwdNoOverlap)""",
    mistakes=(
        Mistake("poptorch.SerialPhasedExecution(*[poptorch.Phase(*[f\"chunk{4 * p + i}\" for i "
                "in range(4)]) for p in range(4)]).setTensorsLiveness("
                "poptorch.Liveness.OffChipAfterEachPhase)", "is one Stage"),
        Mistake(f"poptorch.SerialPhasedExecution({_SERIAL_PHASES})", "setTensorsLiveness"),
        Mistake("poptorch.ParallelPhasedExecution(*[poptorch.Phase(poptorch.Stage(f\"chunk{2 * p}"
                "\").ipu(0), poptorch.Stage(f\"chunk{2 * p + 1}\").ipu(1)) for p in range(8)])",
                "odd phases on odd IPUs"),
        Mistake("poptorch.PipelinedExecution(*[poptorch.Stage(*[f\"chunk{4 * i + j}\" for j in "
                "range(4)]).ipu(i) for i in range(4)])", "keeps every weight"),
        Mistake("poptorch.SerialPhasedExecution(poptorch.Phase(*[poptorch.Stage(f\"chunk{i}\") "
                "for i in range(4)])).setTensorsLiveness(poptorch.Liveness.OffChipAfterEachPhase)",
                "every block must be in a phase"),
        Mistake("poptorch.SerialPhasedExecution(*[poptorch.Phase(*[poptorch.Stage(f\"chunk{4 * p "
                "+ i}\") for i in range(4)]) for p in range(4)]).setTensorsLiveness("
                "poptorch.Liveness.OffChipAfterFwdNoOverlap)", "name no IPU"),
    ),
    writes_code=True)


@functools.lru_cache(maxsize=8)
def serial_outcome(liveness: str, width: int = WIDTH) -> lesson.Outcome:
    """The lesson's model (or one `width` wide) in 4 serial phases of 4 stages under one liveness."""
    return lesson.plan_model(lesson.chunked_model(width, LAYERS, CHUNKS),
                             lesson.phased_strategy(lesson.SERIAL, CHUNKS, liveness))


def fastest_fitting_liveness(width: int = WIDTH) -> poptorch.Liveness:
    """Of the livenesses whose plan fits, the one with the shortest step."""
    fitting = {name: serial_outcome(name, width).plan for name in lesson.LIVENESS
               if serial_outcome(name, width).fits}
    return lesson.LIVENESS[min(fitting, key=lambda name: fitting[name].call_seconds)]


GROWN_WIDTH = 2048  # exercise 6.2: the lesson's model grown from a hidden size of 1,536


def _check_liveness(answer) -> Feedback:
    if isinstance(answer, str) and answer in lesson.LIVENESS:
        return wrong(f"give the enum value, poptorch.Liveness.{answer}, not a string.")
    if not isinstance(answer, poptorch.Liveness):
        return wrong(f"the answer is a poptorch.Liveness value (e.g. poptorch.Liveness."
                     f"AlwaysLive), not {type(answer).__name__} {answer!r}.")
    best = fastest_fitting_liveness(GROWN_WIDTH)
    outcome = serial_outcome(answer.name, GROWN_WIDTH)
    if not outcome.fits:
        worst = _fullest(outcome)
        return wrong(f"at a hidden size of {GROWN_WIDTH:,}, Liveness.{answer.name} does not fit: "
                     f"IPU {worst.ipu} needs {format_bytes(worst.total)} of "
                     f"{format_bytes(worst.capacity)}, since it holds several phases' weights "
                     f"at once.")
    fastest = serial_outcome(best.name, GROWN_WIDTH).plan.call_seconds
    if answer != best:
        slower = outcome.plan.call_seconds - fastest
        return wrong(f"Liveness.{answer.name} fits, but its step is {slower * 1e3:,.1f} ms "
                     f"slower than the fastest liveness that fits: it streams more (or "
                     f"overlaps less).")
    return right(f"at a hidden size of {GROWN_WIDTH:,}, Liveness.{answer.name} fits and takes "
                 f"{fastest * 1e3:,.1f} ms per step, the least of the livenesses that fit.")


fitting_liveness = Exercise(
    "The fastest liveness that fits a wider model", _check_liveness,
    expects='a poptorch.Liveness member',
    skill='compare livenesses by memory and time',
    hint="Compile the four serial plans of the wider model (lesson.chunked_model(2048, 16, 16) "
         "under lesson.phased_strategy(lesson.SERIAL, 16, name) for each name in "
         "lesson.LIVENESS) and compare .fits and .plan.call_seconds, or set the phase planner "
         "to a hidden size of 2048 and try each liveness.",
    solution="""
wider = lesson.chunked_model(2048, 16, 16)
outcomes = {name: lesson.plan_model(wider, lesson.phased_strategy(lesson.SERIAL, 16, name))
            for name in lesson.LIVENESS}
fitting = {name: o.plan.call_seconds for name, o in outcomes.items() if o.fits}
my_liveness = poptorch.Liveness[min(fitting, key=fitting.get)]""",
    mistakes=(Mistake("poptorch.Liveness.AlwaysLive", "does not fit"),
              Mistake("poptorch.Liveness.OffChipAfterFwdNoOverlap", "does not fit"),
              Mistake("\"OffChipAfterEachPhase\"", "give the enum value")))
