"""Exercises of lesson 13: IPUConfig and Hugging Face models."""
from __future__ import annotations

import dataclasses
import functools
import itertools

from ...errors import Error
from ...optimum.graphcore import IPUConfig
from ...simulator.compile import compile_plan
from ..explorers.ipuconfig import bert_ipu_config, plan_bert
from .base import Exercise, Feedback, Mistake, as_number, check_number, right, wrong

LAYERS, IPUS = 12, 4  # BERT-Base over a 4-IPU pipeline
# A split is right when its throughput is within MARGIN of the best split's. Splits whose
# busiest IPU is as light as it can be differ only by fill, flush and copies (under 3% in
# the simulator: [0, 4, 4, 4], [1, 4, 4, 3], [1, 3, 4, 4], [1, 4, 3, 4]); every split that
# loads an IPU more is at least 5% slower. A calibration of the cost model moves these
# figures, not that gap.
MARGIN = 0.04


@functools.lru_cache(maxsize=1)
def _reference_plan():
    """The even split, compiled once through the facade: its graph and run configuration."""
    return plan_bert(bert_ipu_config([3, 3, 3, 3])).plan


def _seconds(split: tuple[int, ...]) -> float:
    """Simulated seconds per call for `split`: the reference graph with its blocks moved.

    Only the encoder blocks' IPUs change, so re-planning the captured graph gives what
    compiling the model again with that layers_per_ipu would give, without a new capture.
    """
    plan = _reference_plan()
    layer_ipu = [ipu for ipu, count in enumerate(split) for _ in range(count)]
    blocks = {b: (layer_ipu[int(b[7:])] if b.startswith("Encoder") else ipu)
              for b, ipu in plan.graph.blocks.items()}
    graph = dataclasses.replace(plan.graph, blocks=blocks)
    return compile_plan(graph, plan.config, check_memory=False).call_seconds


@functools.lru_cache(maxsize=1)
def best_split() -> list[int]:
    """The fastest layers_per_ipu, by hill-climbing from the even split one layer at a time."""
    best = (3, 3, 3, 3)
    best_time = _seconds(best)
    improved = True
    while improved:
        improved = False
        for src, dst in itertools.permutations(range(IPUS), 2):
            if best[src] == 0:
                continue
            moved = list(best)
            moved[src], moved[dst] = moved[src] - 1, moved[dst] + 1
            seconds = _seconds(tuple(moved))
            if seconds < best_time * (1 - 1e-9):
                best, best_time, improved = tuple(moved), seconds, True
    return list(best)


def _whole_numbers(values) -> list[int] | None:
    """A list, tuple or 1-D array of whole numbers (ints, NumPy or torch integers), as ints."""
    if hasattr(values, "tolist") and not isinstance(values, (list, tuple)):
        values = values.tolist()  # a NumPy array or a torch tensor
    if not isinstance(values, (list, tuple)):
        return None
    numbers = [as_number(n) for n in values]
    if any(not isinstance(n, int) for n in numbers):
        return None
    return numbers


def _check_balance(layers_per_ipu) -> Feedback:
    layers = _whole_numbers(layers_per_ipu)
    if layers is None or len(layers) != IPUS:
        return wrong(f"layers_per_ipu should be a list of {IPUS} whole numbers, one per IPU, "
                     f"got {layers_per_ipu!r}.")
    layers_per_ipu = layers
    if -1 in layers_per_ipu:
        return wrong("-1 shares layers evenly; the point here is to choose the counts yourself.")
    if sum(layers_per_ipu) != LAYERS:
        return wrong(f"{list(layers_per_ipu)} places {sum(layers_per_ipu)} layers; BERT-Base has "
                     f"{LAYERS} encoder layers.")
    try:
        yours = plan_bert(bert_ipu_config(layers_per_ipu))
    except (Error, AssertionError) as error:
        return wrong(f"that configuration does not compile: {error}")
    if not yours.fits:
        return wrong("that split does not fit in memory: spread the layers more evenly.")
    best_seconds = _seconds(tuple(best_split()))
    mine = yours.plan
    busy = mine.timeline.utilisation()
    if mine.call_seconds <= best_seconds * (1 + MARGIN):
        return right(f"{mine.samples_per_second:,.0f} sequences/s, within {MARGIN:.0%} of the "
                     f"fastest split: IPU 0 also runs the embedding and the masked-LM head, so "
                     f"it takes fewer layers.")
    busiest = max(range(IPUS), key=lambda i: busy[i])
    best_rate = mine.config.samples_per_call / best_seconds
    return wrong(f"{mine.samples_per_second:,.0f} sequences/s against "
                 f"{best_rate:,.0f} for the best split. IPU {busiest} is the busiest "
                 f"({busy[busiest]:.0%} of the call): move a layer off it.")


balance_bert = Exercise(
    "Balance BERT-Base (masked LM) over 4 IPUs", _check_balance,
    expects='a list of 4 whole numbers',
    skill='balance a Hugging Face model with layers_per_ipu',
    hint="the slowest IPU sets the pace of the pipeline. Every encoder layer costs the same, but "
         "IPU 0 also runs the embedding and the masked-LM head (they share a weight): compare "
         "plan.timeline.utilisation() for [3, 3, 3, 3] and move layers off the busiest IPU.",
    solution="""
# IPU 0 also runs the embedding and the masked-LM head: give it fewer layers, and compare.
from ipu_tutorials.classroom.explorers.ipuconfig import bert_ipu_config, plan_bert

candidates = [[3, 3, 3, 3], [2, 4, 3, 3], [1, 4, 4, 3], [0, 4, 4, 4]]
speed = {tuple(c): plan_bert(bert_ipu_config(c)).plan.samples_per_second for c in candidates}
my_layers_per_ipu = list(max(speed, key=speed.get))""",
    mistakes=(Mistake("[3, 3, 3, 3]", "IPU 0 is the busiest"),
              Mistake("[3, 3, 3, 2]", "places 11 layers; BERT-Base has 12"),
              Mistake("[4, 4, 4]", "a list of 4 whole numbers"),
              Mistake("[-1, 4, 4, 4]", "-1 shares layers evenly"),
              Mistake("[12, 0, 0, 0]", "does not fit in memory")),
    writes_code=True)


POD_CONFIG = IPUConfig(layers_per_ipu=[3, 3, 3, 3], ipus_per_replica=4,
                       replication_factor={"pod16": 4, "pod64": 16},
                       gradient_accumulation_steps={"pod16": 48, "pod64": 32},
                       device_iterations=2)
MICRO_BATCH = 8


def _check_pod64_batch(answer) -> Feedback:
    factor = POD_CONFIG.batch_size_factor(pod_type="pod64")
    expected = MICRO_BATCH * factor
    pod16 = MICRO_BATCH * POD_CONFIG.batch_size_factor(pod_type="pod16")
    typical = {
        factor: f"that is batch_size_factor(pod_type=\"pod64\"): multiply it by the "
                f"micro-batch of {MICRO_BATCH}.",
        expected // 2: "did you leave out the 2 device iterations?",
        MICRO_BATCH * 16 * 48 * 2: "that mixes the pod64 replication with the pod16 gradient "
                                   "accumulation: take every value for the pod64.",
    }
    if pod16 != expected:
        typical[pod16] = ("that is the pod16 batch: on a pod64 the replication factor and the "
                          "gradient accumulation take their pod64 values.")
    return check_number(answer, expected, "the pod64 combined batch",
                        f"{MICRO_BATCH} x 16 replicas x 32 micro-batches x 2 device iterations = "
                        f"{expected:,} sequences per call against the pod16's {pod16:,}: the "
                        f"larger POD replicates more and accumulates less.", typical=typical)


pod64_batch = Exercise(
    "The combined batch on a pod64", _check_pod64_batch,
    expects='a number',
    skill="read an IPUConfig's per-POD values",
    hint="the combined batch is micro-batch x replication_factor x gradient_accumulation_steps x "
         "device_iterations, each taken for the POD type you run on.",
    solution=f"my_pod64_batch = {MICRO_BATCH} * 16 * 32 * 2  # = "
             f"{MICRO_BATCH * 16 * 32 * 2}",
    mistakes=(Mistake("8 * 4 * 48 * 2", "is the pod16 batch"),
              Mistake("16 * 32 * 2", "multiply it by the micro-batch of 8"),
              Mistake("8 * 16 * 32", "leave out the 2 device iterations"),
              Mistake("8 * 16 * 48 * 2", "mixes the pod64 replication")))
