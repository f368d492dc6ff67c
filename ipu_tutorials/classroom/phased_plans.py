"""Lesson 6's model and strategies: a transformer in per-layer blocks, planned phased or pipelined.

The model is built on the meta device and cut into blocks "chunk0", "chunk1", ... of equal
numbers of layers (the embedding joins the first, the head and loss the last), so that the
same model can be phased (one block per stage) or pipelined (a run of blocks per IPU).
Every figure comes from compiling it with poptorch.trainingModel.
"""
from __future__ import annotations

import contextlib
import dataclasses
import logging

import torch

from .. import poptorch
from ..errors import Error, OutOfMemoryError
from ..simulator.compile import Plan
from ..simulator.memory import MemoryPlan
from ..tutorial.models import TransformerLM
from .plans import plan_on_meta

IPUS = 4  # the lesson's system: one IPU-M2000
VOCAB, CONTEXT, HEADS = 8000, 128, 16
MICRO_BATCH, ACCUMULATION = 4, 8  # 8 micro-batches also fill a 4-IPU pipeline (2N-1 = 7)
SERIAL, PARALLEL = "SerialPhasedExecution", "ParallelPhasedExecution"
LIVENESS = {live.name: live for live in poptorch.Liveness}


def block_name(index: int) -> str:
    return f"chunk{index}"


_MODELS: dict[tuple[int, int, int], TransformerLM] = {}


def chunked_model(width: int = 1536, layers: int = 16, chunks: int = 16) -> TransformerLM:
    """A transformer on the meta device, its layers split into `chunks` blocks in order
    (built once per size; the same object is returned again).

    Raises:
        Error: the layers do not divide into the chunks.
    """
    if (width, layers, chunks) not in _MODELS:
        _MODELS[(width, layers, chunks)] = _build(width, layers, chunks)
    return _MODELS[(width, layers, chunks)]


def _build(width: int, layers: int, chunks: int) -> TransformerLM:
    if chunks < 1 or layers % chunks:
        raise Error(f"{layers} layers do not split evenly into {chunks} blocks: choose a number "
                    f"of blocks that divides {layers}")
    with torch.device("meta"):
        model = TransformerLM(vocab=VOCAB, width=width, depth=layers, heads=HEADS, context=CONTEXT)
    per_block = layers // chunks
    for index in range(chunks):
        poptorch.BeginBlock(model.layers[index * per_block], block_name(index))
    return model


def phased_strategy(kind: str, chunks: int, liveness: str = "AlwaysLive", ipus: int = IPUS):
    """One block per stage: serial phases of `ipus` stages on IPUs 0..ipus-1, or parallel
    phases of ipus/2 stages alternating between the even and the odd IPUs."""
    per_phase = ipus if kind == SERIAL else ipus // 2
    phases = [poptorch.Phase(*[poptorch.Stage(block_name(p * per_phase + i)).ipu(ipu)
                               for i, ipu in enumerate(phase_ipus(kind, p, per_phase))])
              for p in range(-(-chunks // per_phase))]
    if kind == SERIAL:
        return poptorch.SerialPhasedExecution(*phases).setTensorsLiveness(LIVENESS[liveness])
    strategy = poptorch.ParallelPhasedExecution(*phases)
    if liveness not in ("AlwaysLive", "OffChipAfterFwd"):
        raise Error(f"Liveness.{liveness} is only supported for serial phase execution; "
                    f"ParallelPhasedExecution offers AlwaysLive or sendTensorsOffChipAfterFwd()")
    return strategy.sendTensorsOffChipAfterFwd(liveness == "OffChipAfterFwd")


def phase_ipus(kind: str, phase: int, stages: int) -> list[int]:
    """The IPUs of one phase's stages, named as PopTorch needs them (it has no default):
    0..stages-1 for serial phases; even IPUs for even phases and odd for odd ones in parallel."""
    if kind == SERIAL:
        return list(range(stages))
    return [2 * i + phase % 2 for i in range(stages)]


def pipelined_strategy(chunks: int, ipus: int = IPUS) -> poptorch.PipelinedExecution:
    """The same blocks pipelined: an equal run of consecutive blocks on each IPU."""
    per_ipu = chunks // ipus
    return poptorch.PipelinedExecution(*[
        poptorch.Stage(*[block_name(i * per_ipu + j) for j in range(per_ipu)]).ipu(i)
        for i in range(ipus)])


@dataclasses.dataclass
class Outcome:
    """A compiled configuration: the plan when it fits, else the memory plan that does not."""

    memory: MemoryPlan
    plan: Plan | None

    @property
    def fits(self) -> bool:
        return self.plan is not None


def training_options(strategy) -> poptorch.Options:
    opts = poptorch.Options().setExecutionStrategy(strategy)
    opts.Training.gradientAccumulation(ACCUMULATION)
    return opts


def _strategy_key(strategy) -> tuple:
    """Everything about a strategy that changes its plan."""
    return (type(strategy).__name__, repr(strategy),
            int(getattr(strategy, "_tensors_liveness", 0)),
            getattr(strategy, "_separate_backward_phase", False))


# the lesson compiles the same plans more than once: each outcome, and what compiling it logged
_OUTCOMES: dict[tuple, tuple[Outcome, list[logging.LogRecord]]] = {}


def plan_model(model: torch.nn.Module, strategy) -> Outcome:
    """Compile `model` for training with AdamW under `strategy`, fitting or not.

    Outcomes of the lesson's (cached, unchanging) models are remembered by strategy; a
    remembered one logs again what its compile logged (a stage that names no IPU warns every
    time, as every compile of it would).

    Raises:
        Error: the strategy breaks a placement rule.
    """
    if not any(model is known for known in _MODELS.values()):
        return _compile(model, strategy)
    key = (id(model), _strategy_key(strategy))
    if key in _OUTCOMES:
        outcome, logged = _OUTCOMES[key]
        for record in logged:
            logging.getLogger(record.name).handle(record)
        return outcome
    with _logged_by_poptorch() as logged:
        outcome = _compile(model, strategy)
    _OUTCOMES[key] = outcome, logged
    return outcome


@contextlib.contextmanager
def _logged_by_poptorch():
    """The records the "poptorch" logger handles inside the block (still handled as usual)."""
    records: list[logging.LogRecord] = []
    keep = logging.Handler()
    keep.emit = records.append
    logger = logging.getLogger("poptorch")
    logger.addHandler(keep)
    try:
        yield records
    finally:
        logger.removeHandler(keep)


def _compile(model: torch.nn.Module, strategy) -> Outcome:
    tokens = torch.zeros(MICRO_BATCH * ACCUMULATION, CONTEXT, dtype=torch.long, device="meta")
    try:
        plan = plan_on_meta(model, training_options(strategy),
                            poptorch.optim.AdamW(model.parameters()), tokens, tokens)
        return Outcome(plan.memory, plan)
    except OutOfMemoryError as error:
        return Outcome(error.plan, None)


def streaming_seconds(plan: Plan) -> float:
    """Seconds of one call during which an IPU streams and none computes."""
    return plan.breakdown()["exchange and sync"]
