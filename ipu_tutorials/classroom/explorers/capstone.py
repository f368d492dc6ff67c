"""The capstone dashboard: BERT-Large on a simulated Bow Pod16, six choices -> memory, speed, timeline.

Every figure comes from compiling the calibration's BERT-Large (on the meta device) with
poptorch.trainingModel under tutorial.capstone's options: the plan's memory per IPU, its
throughput, and its timeline. A step of thousands of micro-batches is too long to draw box by
box, so the timeline shows its two ends: the pipeline filling, and the flush, all-reduce,
optimizer-state streaming and weight update that close it.
"""
from __future__ import annotations

import functools

from ...errors import OutOfMemoryError
from ...profiling import plot_memory, plot_timeline
from ...simulator.memory import format_bytes
from ...simulator.timeline import pipeline_parts
from ...tutorial.capstone import POD_IPUS, PUBLISHED, PodConfig, plan_pod16, sequences_per_second
from ...calibration.published_runs import BERT_LARGE_SEQUENCES_PER_SECOND
from .widgets import FIGURE_INCHES, Explorer, choice

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
            f"{config.ipus} of {POD_IPUS} IPUs, accumulation {config.accumulation}: ")


def _fits(plan) -> str:
    fullest = max(plan.memory.ipus, key=lambda m: m.total)
    speed = sequences_per_second(plan)
    return (f"<b>fits</b> (fullest IPU {fullest.ipu}: {format_bytes(fullest.total)} of "
            f"{format_bytes(fullest.capacity)}); <b>{speed:,.0f} sequences/s</b> simulated "
            f"(published run: {BERT_LARGE_SEQUENCES_PER_SECOND:,})")


def step_ends(events: list) -> tuple[tuple[float, float], tuple[float, float]]:
    """The first device iteration's two ends, as windows in seconds since the call began:
    the opening (the fill, and as long again of the main part) and the closing (as long of
    the main part, the flush, then the all-reduce, streaming and update)."""
    step = [e for e in events if e.step == 0 and e.ipu >= 0]
    parts = {name: (start, end) for name, start, end in pipeline_parts(step)}
    (fill_start, fill_end), (flush_start, _) = parts["fill"], parts["flush"]
    return ((fill_start, 2 * fill_end - fill_start),
            (flush_start - (fill_end - fill_start), max(e.end for e in step)))


def draw(result: dict, figure) -> None:
    """Memory per IPU across the top; when the plan fits, the two ends of its timeline under
    it, side by side."""
    plan = result.get("plan")
    layout = [["memory", "memory"], ["opening", "closing"]] if plan else [["memory"]]
    axes = figure.subplot_mosaic(layout, height_ratios=[1, 1.25] if plan else [1])
    if plan is None:
        figure.set_figheight(figure.get_figheight() / 2)  # the memory panel alone
    plot_memory(result["memory"], ax=axes["memory"], title="memory per IPU (one replica)")
    if plan is None:
        return
    ipus = result["config"].ipus_per_replica
    opening, closing = step_ends(plan.timeline.events)
    for name, window, title in (("opening", opening, "the step opens: the pipeline fills"),
                                ("closing", closing, "the step closes: flush, all-reduce, update")):
        plot_timeline(plan.timeline.events, ipus, ax=axes[name], steps=1, show_host=False,
                      label_micro_batches=False, window=window, title=title)
    opening_legend = axes["opening"].get_legend()  # the closing window's legend names every
    for entry in opening_legend.get_texts() + opening_legend.legend_handles:  # kind; the
        entry.set_visible(False)  # opening's keeps only its note on the host's wait
    figure.tight_layout()


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
                    draw, figsize=(FIGURE_INCHES, 7.4))

