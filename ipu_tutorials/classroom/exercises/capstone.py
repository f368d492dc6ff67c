"""Exercises of lesson 15: BERT-Large on a simulated Pod16."""
from __future__ import annotations

import torch

from ... import poptorch
from ...errors import Error, OutOfMemoryError
from ...simulator.memory import format_bytes
from ...tutorial import capstone
from ...calibration.published_runs import BERT_LARGE_SEQUENCES_PER_SECOND, BertPretraining
from .base import Exercise, Feedback, Mistake, check_number, right, wrong

TARGET = BERT_LARGE_SEQUENCES_PER_SECOND  # sequences/s: the published Bow Pod16 run

STARTING_CODE = """
def setup():
    with torch.device("meta"):
        model = BertPretraining(layers_per_ipu=(3, 7, 7, 7))
    opts = poptorch.Options()
    opts.setExecutionStrategy(poptorch.PipelinedExecution(poptorch.AutoStage.AutoIncrement))
    opts.Training.gradientAccumulation(16)
    return model, opts"""


def lesson_namespace() -> dict:
    """The names the lesson defines before its exercises."""
    return {"BertPretraining": BertPretraining, "capstone": capstone}


def _bert_large_parameters() -> int:
    with torch.device("meta"):
        return sum(p.numel() for p in BertPretraining().parameters())


def _plan(model: torch.nn.Module, opts: poptorch.Options):
    """Compile the learner's model and options for an offline Bow Pod16, as the lesson does."""
    half = next(model.parameters()).dtype == torch.float16
    optimizer = capstone.optimizer(model, capstone.PodConfig(half=half))
    opts = opts.clone().useOfflineIpuTarget(21).showCompilationProgressBar(False)
    rows = (capstone.MICRO_BATCH * opts.Training.gradient_accumulation * opts.replication_factor
            * opts.device_iterations)
    inputs = [torch.zeros(rows, n, dtype=torch.long, device="meta")
              for n in (capstone.SEQUENCE, capstone.MASKED, capstone.MASKED)]
    training = poptorch.trainingModel(model, opts, optimizer)
    try:
        training.compile(*inputs)
        return training.plan
    finally:
        training.destroy()


def _check_setup_shape(setup) -> Feedback | tuple:
    if not callable(setup):
        return wrong("give the function itself: setup, with no parentheses.")
    answer = setup()
    if not (isinstance(answer, tuple) and len(answer) == 2
            and isinstance(answer[0], torch.nn.Module) and isinstance(answer[1], poptorch.Options)):
        return wrong("setup() must return (model, opts): the BERT model and its poptorch.Options.")
    model, opts = answer
    if (not isinstance(model, BertPretraining) or
            sum(p.numel() for p in model.parameters()) != _bert_large_parameters()):
        return wrong("the target is for BERT-Large: build BertPretraining with its default size "
                     "and choose only layers_per_ipu (and half).")
    if any(p.device.type != "meta" for p in model.parameters()):
        return wrong("build BERT-Large under `with torch.device(\"meta\"):`: a plan needs no weights.")
    return model, opts


def _out_of_memory(error: OutOfMemoryError, model, opts) -> Feedback:
    fullest = max(error.plan.ipus, key=lambda m: m.total - m.capacity)
    over = (f"IPU {fullest.ipu} needs {format_bytes(fullest.total)} of "
            f"{format_bytes(fullest.capacity)}")
    if next(model.parameters()).dtype == torch.float32:
        return wrong(f"out of memory ({over}): you forgot half precision. Call model.half(): "
                     f"float16 halves the weights, gradients and activations.")
    if getattr(opts.TensorLocations, "location_optimizer", {}).get("onChip", 1):
        return wrong(f"out of memory ({over}): LAMB's two moments per weight are on chip; "
                     f"opts.TensorLocations decides where they live (lesson 8).")
    return wrong(f"out of memory on IPU {fullest.ipu} ({over}): move layers off IPU "
                 f"{fullest.ipu} in layers_per_ipu (IPU 0 also holds the embedding and heads), "
                 f"or use more IPUs per replica.")


def _heaviest_ipu(model: BertPretraining) -> tuple[int, float]:
    """The IPU with the most work (IPU 0's embedding and heads count as HEAD_LAYERS layers),
    and its load over the mean."""
    ipus = max(model.ipus) + 1
    loads = [model.ipus.count(i) + (capstone.HEAD_LAYERS if i == 0 else 0) for i in range(ipus)]
    heaviest = max(range(ipus), key=loads.__getitem__)
    return heaviest, loads[heaviest] / (sum(loads) / ipus)


def _too_slow(plan, model, opts, speed: float) -> Feedback:
    used = plan.placement.ipus_per_replica * opts.replication_factor
    heaviest, imbalance = _heaviest_ipu(model)
    if used < capstone.POD_IPUS:
        return wrong(f"{speed:,.0f} sequences/s, below the target {TARGET:,}: you use only {used} "
                     f"of the {capstone.POD_IPUS} IPUs. Add replicas (replicationFactor) while "
                     f"IPUs per replica x replicas <= {capstone.POD_IPUS}.")
    if imbalance > 1.25:
        return wrong(f"{speed:,.0f} sequences/s, below the target {TARGET:,}: the pipeline is "
                     f"unbalanced. IPU {heaviest} has {imbalance:.1f} times the mean work and the "
                     f"slowest stage sets the pace: even out layers_per_ipu (IPU 0's embedding "
                     f"and heads weigh about {capstone.HEAD_LAYERS} layers).")
    if plan.placement.ipus_per_replica > capstone.PUBLISHED.ipus_per_replica:
        return wrong(f"{speed:,.0f} sequences/s, below the target {TARGET:,}: a pipeline of "
                     f"{plan.placement.ipus_per_replica} IPUs is deeper than BERT-Large needs. "
                     f"Each IPU gets less work per micro-batch and more of the step is fill and "
                     f"exchange: use fewer IPUs per replica and more replicas (lesson 10).")
    return wrong(f"{speed:,.0f} sequences/s, below the target {TARGET:,}: with accumulation "
                 f"{opts.Training.gradient_accumulation} the fill, flush and weight update take "
                 f"a large share of each step. Accumulate more micro-batches per update.")


def _check_pod16(setup) -> Feedback:
    shaped = _check_setup_shape(setup)
    if isinstance(shaped, Feedback):
        return shaped
    model, opts = shaped
    ipus = max(model.ipus, default=0) + 1
    if ipus * opts.replication_factor > capstone.POD_IPUS:
        return wrong(f"{ipus} IPUs per replica x {opts.replication_factor} replicas = "
                     f"{ipus * opts.replication_factor} IPUs, more than the {capstone.POD_IPUS} "
                     f"of a Pod16: use fewer replicas or a shorter pipeline.")
    try:
        plan = _plan(model, opts)
    except OutOfMemoryError as error:
        return _out_of_memory(error, model, opts)
    except (Error, AssertionError) as error:
        if "gradientAccumulation" in str(error):
            return wrong(f"the accumulation is too low for the pipeline: {error}")
        return wrong(f"the simulator refused the setup: {error}")
    speed = capstone.sequences_per_second(plan)
    if speed < TARGET:
        return _too_slow(plan, model, opts, speed)
    fullest = max(plan.memory.ipus, key=lambda m: m.total)
    return right(f"{speed:,.0f} sequences/s on {plan.placement.ipus_acquired} IPUs, the fullest "
                 f"(IPU {fullest.ipu}) at {format_bytes(fullest.total)} of "
                 f"{format_bytes(fullest.capacity)}: the published {TARGET:,} is reached.")


def _mistake(*edits: tuple[str, str]) -> str:
    """The reference solution with a few lines changed: how a learner gets it almost right."""
    code = SOLUTION
    for old, new in edits:
        assert old in code, old
        code = code.replace(old, new)
    return code


SOLUTION = """
def setup():
    with torch.device("meta"):
        model = BertPretraining(layers_per_ipu=(3, 7, 7, 7)).half()
    opts = poptorch.Options().replicationFactor(4)
    opts.setExecutionStrategy(poptorch.PipelinedExecution(poptorch.AutoStage.AutoIncrement))
    opts.Training.gradientAccumulation(1024)
    opts.TensorLocations.setOptimizerLocation(
        poptorch.TensorLocationSettings().useOnChipStorage(False))
    return model, opts"""

pod16_setup = Exercise(
    "Reach the published throughput on a Pod16", _check_pod16,
    expects='a function setup() returning (model, opts)',
    skill='combine every tool to reach a published throughput',
    starting_code=STARTING_CODE,
    hint="Four IPUs per replica, as many replicas as the Pod holds, float16, the optimizer state "
         "off chip, and enough accumulation that the fill and flush are a small part of a step.",
    solution=SOLUTION,
    mistakes=(Mistake(STARTING_CODE, "forgot half precision"),
              Mistake(_mistake((".half()", "")), "forgot half precision"),
              Mistake(_mistake(("replicationFactor(4)", "replicationFactor(8)")),
                      "more than the 16 of a Pod16"),
              Mistake(_mistake(("    opts.TensorLocations.setOptimizerLocation(\n        "
                                "poptorch.TensorLocationSettings().useOnChipStorage(False))\n",
                                "")), "two moments per weight are on chip"),
              Mistake(_mistake(("gradientAccumulation(1024)", "gradientAccumulation(4)")),
                      "accumulation is too low for the pipeline"),
              Mistake(_mistake(("gradientAccumulation(1024)", "gradientAccumulation(32)")),
                      "Accumulate more micro-batches"),
              Mistake(_mistake(("replicationFactor(4)", "replicationFactor(2)")),
                      "you use only 8 of the 16 IPUs"),
              Mistake(_mistake(("(3, 7, 7, 7)", "(12, 4, 4, 4)")), "out of memory on IPU 0"),
              Mistake(_mistake(("(3, 7, 7, 7)", "(0, 3, 3, 3, 3, 4, 4, 4)"),
                               ("replicationFactor(4)", "replicationFactor(2)")),
                      "deeper than BERT-Large needs"),
              Mistake(_mistake(("(3, 7, 7, 7)", "(3, 11, 5, 5)")), "the pipeline is unbalanced")),
    writes_code=True)


PUBLISHED = capstone.PUBLISHED


def _check_samples(answer) -> Feedback:
    micro, accumulation, replicas = capstone.MICRO_BATCH, PUBLISHED.accumulation, PUBLISHED.replicas
    expected = PUBLISHED.samples_per_update()
    mistakes = {
        micro * accumulation: "that is one replica's share: 4 replicas each add theirs.",
        micro * replicas: "each replica accumulates 2048 micro-batches before the update.",
        micro * accumulation * PUBLISHED.ipus: "pipeline stages do not add samples: every "
                                               "micro-batch passes through all 4 IPUs of its "
                                               "replica. Count replicas, not IPUs.",
    }
    if answer in mistakes:
        return wrong(f"{answer}: {mistakes[answer]}")
    return check_number(answer, expected, "the sequences per weight update",
                        f"micro-batch {micro} x accumulation {accumulation} x {replicas} "
                        f"replicas: the published run's global batch.")


samples_per_update = Exercise(
    "Sequences per weight update", _check_samples,
    expects='a number',
    skill='count the global batch of a published run',
    hint="Every replica runs `gradientAccumulation` micro-batches before the all-reduce; the "
         "IPUs of one pipeline share each micro-batch.",
    solution=f"my_sequences = {capstone.MICRO_BATCH} * {PUBLISHED.accumulation} * "
             f"{PUBLISHED.replicas}",
    mistakes=(Mistake(f"{capstone.MICRO_BATCH} * {PUBLISHED.accumulation}", "one replica's share"),
              Mistake(f"{capstone.MICRO_BATCH} * {PUBLISHED.accumulation} * 16",
                      "Count replicas, not IPUs")))
