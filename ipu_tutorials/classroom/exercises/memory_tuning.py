"""Exercises of lesson 7: memory tuning (recomputation, available memory, serialisation)."""
from __future__ import annotations

import functools

import torch

from ... import poptorch
from ...simulator.units import format_bytes
from ..explorers import memory_tuning
from ..explorers.memory_tuning import (IPUS, Outcome, build_model, compile_tuned,
                                       starting_options, tune)
from .base import Exercise, Feedback, Mistake, right, wrong

SLOWDOWN_ALLOWED = 1.5  # a fitting answer may be this much slower than the reference's step
LOCATIONS = ("weight", "optimizer", "accumulator", "activation")


def lesson_namespace() -> dict:
    """The names lesson 7 defines before its exercises."""
    return {"memory_tuning": memory_tuning, "build_model": build_model,
            "starting_options": starting_options}


@functools.lru_cache(maxsize=1)
def reference() -> Outcome:
    """The reference answer: a checkpoint after every layer and an 8-slice vocabulary projection."""
    return tune("checkpoint every layer", 0.6, head_serialization=8)


def _offloaded(opts: poptorch.Options) -> list[str]:
    return [kind for kind in LOCATIONS
            if getattr(opts.TensorLocations, f"location_{kind}", {}).get("onChip", 1) == 0]


def _why_it_does_not_fit(model: torch.nn.Module, opts: poptorch.Options, outcome: Outcome) -> str:
    """Name the fullest IPU, its largest part, and the tool that shrinks that part."""
    worst = outcome.fullest()
    parts = {c: getattr(worst, c) for c in ("activations", "stash", "temporaries")}
    largest = max(parts, key=parts.get)
    head = (f"IPU {worst.ipu} needs {format_bytes(worst.total)} of "
            f"{format_bytes(worst.capacity)}; its largest tunable part is {largest} "
            f"({format_bytes(parts[largest])}). ")
    if opts._Popart.options.get("autoRecomputation") == 0:
        return head + ("You turned recomputation off (autoRecomputation 0): a pipeline then "
                       "keeps every in-flight micro-batch's activations. Leave it unset.")
    if largest == "activations" and not getattr(model, "checkpoint_every_layer", True):
        return head + ("Add a recomputation checkpoint after every layer "
                       "(model.checkpoint_every_layer = True) so the backward pass rebuilds "
                       "one layer's activations at a time.")
    return head + (f"Its temporaries ({format_bytes(worst.temporaries)}, mostly the "
                   f"vocabulary projection's on the last IPU) are the part left to tune: "
                   f"serialise it (model.head_serialization, poptorch.serializedMatMul), or "
                   f"cap them with a lower availableMemoryProportion on that IPU.")


def _check_fit(answer) -> Feedback:
    if not (isinstance(answer, tuple) and len(answer) == 2
            and isinstance(answer[0], torch.nn.Module)
            and isinstance(answer[1], poptorch.Options)):
        return wrong(f"pass a tuple (model, opts): the model from build_model() and its "
                     f"poptorch.Options, got {type(answer).__name__}.")
    model, opts = answer
    params = sum(p.numel() for p in model.parameters())
    expected = sum(p.numel() for p in build_model().parameters())
    if params != expected:
        return wrong(f"the model has {params:,} parameters, not the lesson's {expected:,}: "
                     f"tune its memory, do not shrink it.")
    if opts.replication_factor != 1:
        return wrong(f"replicationFactor({opts.replication_factor}) copies the model onto more "
                     f"IPUs; each replica's IPUs hold as much as before. Keep one replica and "
                     f"fit it on its {IPUS} IPUs.")
    offloaded = _offloaded(opts)
    if offloaded:
        return wrong(f"your options keep the {', '.join(offloaded)} tensors off chip "
                     f"(useOnChipStorage(False)): offloading is lesson 8's tool, and it costs "
                     f"streaming time. Keep everything on chip and tune recomputation and "
                     f"serialisation instead.")
    try:
        outcome = compile_tuned(model, opts)
    except (poptorch.Error, AssertionError) as error:
        return wrong(f"the model does not compile: {error}")
    if outcome.memory.ipus and len(outcome.memory.ipus) != IPUS:
        return wrong(f"the plan uses {len(outcome.memory.ipus)} IPUs per replica; fit the "
                     f"model on the lesson's {IPUS}.")
    if not outcome.fits:
        return wrong("it does not fit yet. " + _why_it_does_not_fit(model, opts, outcome))
    return _judge_speed(outcome)


def _judge_speed(outcome: Outcome) -> Feedback:
    """Throughput, not step time, so that a longer accumulation is not taken for slowness."""
    best = reference().plan.samples_per_second
    speed = outcome.plan.samples_per_second
    if best / speed > SLOWDOWN_ALLOWED:
        return wrong(f"it fits, but trains {speed:,.1f} sequences/s, {best / speed:.1f}x slower "
                     f"than the {best:,.1f} of a serialised vocabulary projection: so low an "
                     f"availableMemoryProportion makes the layers' matmuls run in pieces too. "
                     f"Raise it and serialise only the matmul that needs it.")
    worst = outcome.fullest()
    return right(f"every IPU fits with nothing off chip; the fullest, IPU {worst.ipu}, holds "
                 f"{format_bytes(worst.total)} of {format_bytes(worst.capacity)}, and it trains "
                 f"{speed:,.1f} sequences/s.")


fit_without_offloading = Exercise(
    "Fit the language model without offloading", _check_fit,
    expects='a tuple (model, opts)',
    skill='fit a model with recomputation and serialisation',
    starting_code='model = build_model()\nopts = starting_options()\nmy_answer = (model, opts)',
    hint="run memory_tuning_explorer() and find the fullest IPU's largest part: activations "
         "shrink with recomputation checkpoints, the vocabulary projection's temporaries with "
         "serializedMatMul (or a lower availableMemoryProportion, which costs time).",
    solution="""
model = build_model()
model.checkpoint_every_layer = True  # poptorch.recomputationCheckpoint after every layer
model.head_serialization = 8  # the vocabulary projection in 8 serializedMatMul slices
opts = starting_options()
my_answer = (model, opts)
""",
    mistakes=(
        Mistake("(build_model(), starting_options())", "recomputation checkpoint"),
        Mistake("model = build_model()\nmodel.checkpoint_every_layer = True\n"
                "opts = starting_options()\nopts._Popart.set('autoRecomputation', 0)\n"
                "(model, opts)", "turned recomputation off"),
        Mistake("model = build_model()\nmodel.checkpoint_every_layer = True\n"
                "(model, starting_options())",
                "serialise it"),
        Mistake("opts = starting_options()\nopts.TensorLocations.setOptimizerLocation("
                "poptorch.TensorLocationSettings().useOnChipStorage(False))\n"
                "(build_model(), opts)", "off chip"),
        Mistake("model = build_model()\nmodel.checkpoint_every_layer = True\n"
                "opts = starting_options().setAvailableMemoryProportion("
                "{f'IPU{i}': 0.05 for i in range(4)})\n(model, opts)", "availableMemoryProportion"),
    ),
    writes_code=True)


CHANGES = {
    "a": ("serialise the embedding into 4 slices", dict(embedding_serialization=4)),
    "b": ("serialise the vocabulary projection into 8 slices", dict(head_serialization=8)),
    "c": ("lower availableMemoryProportion to 0.3 on every IPU", dict(proportion=0.3)),
}


@functools.lru_cache(maxsize=1)
def freed_on_fullest() -> tuple[int, dict[str, int]]:
    """(the fullest IPU with checkpoints alone, bytes each change frees on it)."""
    start = tune("checkpoint every layer")
    ipu = start.fullest().ipu
    freed = {}
    for letter, (_, change) in CHANGES.items():
        after = tune("checkpoint every layer", **{"proportion": 0.6, **change})
        freed[letter] = start.memory[ipu].total - after.memory[ipu].total
    return ipu, freed


def _check_most_freed(answer) -> Feedback:
    ipu, freed = freed_on_fullest()
    if not isinstance(answer, str) or answer.strip().lower() not in CHANGES:
        return wrong(f"answer with one letter: {', '.join(CHANGES)}.")
    letter = answer.strip().lower()
    best = max(freed, key=freed.get)
    summary = "; ".join(f"{k}) {format_bytes(v)}" for k, v in freed.items())
    if letter == best:
        return right(f"on IPU {ipu}: {summary}. Tune where the memory is.")
    if letter == "a":
        return wrong(f"the embedding lives on IPU 0, but the fullest is IPU {ipu}: serialising "
                     f"the embedding frees {format_bytes(freed['a'])} there.")
    return wrong(f"a proportion of 0.3 caps IPU {ipu}'s temporaries, freeing "
                 f"{format_bytes(freed['c'])}, less than the serialised projection frees, and "
                 f"it slows every matmul it caps.")


most_freed = Exercise(
    "Which change frees the most on the fullest IPU?", _check_most_freed,
    expects="a letter: 'a', 'b' or 'c'",
    skill='find where memory goes on the fullest IPU',
    hint="find the fullest IPU with checkpoints alone, then ask which of its parts each change "
         "touches: the embedding sits on IPU 0, the vocabulary projection on IPU 3.",
    solution='my_choice = "b"',
    mistakes=(Mistake('"a"', "the embedding lives on IPU 0"), Mistake('"c"', "caps IPU")))
