"""The capstone dashboard: BERT-Large on a simulated Bow Pod16, six choices -> memory, speed, timeline.

Every figure comes from compiling the calibration's BERT-Large (on the meta device) with
poptorch.trainingModel under tutorial.capstone's options: the plan's memory per IPU, its
throughput, and its timeline. A step of thousands of micro-batches is too long to draw box by
box, so the timeline shows its two ends: the pipeline filling, and the flush, all-reduce,
optimizer-state streaming and weight update that close it.
"""
from __future__ import annotations

import dataclasses
import functools

from ...errors import OutOfMemoryError
from ...profiling import plot_memory, plot_timeline
from ...simulator.memory import format_bytes
from ...tutorial.capstone import POD_IPUS, PUBLISHED, PodConfig, plan_pod16, sequences_per_second
from ...tutorial.published_runs import BERT_LARGE_SEQUENCES_PER_SECOND
from .widgets import Explorer, choice

IPU_COUNTS = (1, 2, 4, 8, 16)
ACCUMULATIONS = (8, 16, 32, 64, 128, 256, 512, 1024, 2048)


@functools.lru_cache(maxsize=64)
def pod16_result(config: PodConfig) -> dict:
    """Plan `config` and describe it: {"config", "memory", "text"} and "plan" when it fits.

    Raises:
        poptorch.Error: a placement or batching rule is broken (the explorer shows it).
    """
    try:
        plan = plan_pod16(config)
    except OutOfMemoryError as error:
        over = str(error).split(".\n", 1)[0]
        return {"config": config, "memory": error.plan.ipus,
                "text": f"{_head(config)}<b style='color:#c62828'>{over}</b>"}
    return {"config": config, "plan": plan, "memory": plan.memory.ipus,
            "text": _head(config) + _fits(plan)}


def _head(config: PodConfig) -> str:
    return (f"BERT-Large, {config.replicas} replica(s) x {config.ipus_per_replica} IPU(s) = "
            f"{config.ipus} of {POD_IPUS} IPUs, accumulation {config.accumulation} "
            f"({config.samples_per_update():,} sequences per update): ")


def _fits(plan) -> str:
    fullest = max(plan.memory.ipus, key=lambda m: m.total)
    speed = sequences_per_second(plan)
    return (f"<b>fits</b> (fullest IPU {fullest.ipu}: {format_bytes(fullest.total)} of "
            f"{format_bytes(fullest.capacity)}); <b>{speed:,.0f} sequences/s</b> simulated "
            f"(published run: {BERT_LARGE_SEQUENCES_PER_SECOND:,})")


def step_ends(events: list, num_stages: int) -> tuple[list, list, float]:
    """The first device iteration's two ends, as time windows: the opening (until the first
    2 x stages micro-batches are done: the fill) and the closing (from the start of the last
    2 x stages micro-batches: the flush, all-reduce, streaming and update), the closing
    shifted to start at 0. Returns (opening, closing, the closing's offset in seconds)."""
    step = [e for e in events if e.step == 0 and e.ipu >= 0]
    batches = [e.micro_batch for e in step if e.micro_batch is not None]
    first, last = min(batches), max(batches)
    window = 2 * num_stages
    opened = max(e.end for e in step if e.micro_batch is not None and e.micro_batch < first + window)
    closes = min(e.start for e in step if e.micro_batch is not None and e.micro_batch > last - window)
    opening = [e for e in step if e.start < opened]
    closing = [dataclasses.replace(e, start=e.start - closes) for e in step if e.start >= closes]
    return opening, closing, closes


def draw(result: dict, figure) -> None:
    """Memory per IPU; when the plan fits, the two ends of its timeline beside it."""
    plan = result.get("plan")
    axes = figure.subplots(1, 3 if plan else 1, squeeze=False,
                           gridspec_kw={"width_ratios": [1, 1.3, 1.3] if plan else [1]})[0]
    plot_memory(result["memory"], ax=axes[0])
    axes[0].set_title("memory per IPU (one replica)", pad=14)  # above the capacity label
    if plan is None:
        return
    ipus = result["config"].ipus_per_replica
    opening, closing, offset = step_ends(plan.timeline.events, len(plan.placement.stages))
    plot_timeline(opening, ipus, ax=axes[1], show_host=False, label_micro_batches=False,
                  title="the step opens: the pipeline fills")
    plot_timeline(closing, ipus, ax=axes[2], show_host=False, label_micro_batches=False,
                  title=f"the step closes, {offset:,.2f} s in")
    axes[1].get_legend().remove()  # the closing window's legend names every kind


def capstone_explorer(ipus_per_replica: int = PUBLISHED.ipus_per_replica,
                      replicas: int = PUBLISHED.replicas,
                      accumulation: int = PUBLISHED.accumulation, half: bool = PUBLISHED.half,
                      offload: bool = PUBLISHED.offload,
                      recompute: bool = PUBLISHED.recompute) -> Explorer:
    """The Pod16 dashboard: choose the split, accumulation, half, offload and checkpoints."""
    import ipywidgets as widgets

    controls = {"ipus_per_replica": choice("IPUs per replica", IPU_COUNTS, ipus_per_replica),
                "replicas": choice("replicas", IPU_COUNTS, replicas),
                "accumulation": choice("gradient accumulation", ACCUMULATIONS, accumulation),
                "half": widgets.Checkbox(value=half, description="float16"),
                "offload": widgets.Checkbox(value=offload, description="optimizer state off chip"),
                "recompute": widgets.Checkbox(value=recompute,
                                              description="checkpoint every layer")}

    def compute(**values):
        return pod16_result(PodConfig(**values))

    return Explorer("Capstone explorer: BERT-Large on a simulated Bow Pod16", controls, compute,
                    draw, figsize=(14, 3.6))

