"""The phase planner: model size x phases x liveness -> per-IPU memory and streaming time,
beside a pipeline of the same model on the same four IPUs.

Both plans come from compiling the lesson's transformer (classroom/phased_plans.py) with
poptorch.trainingModel on the meta device.
"""
from __future__ import annotations

import functools

from ...profiling import style
from ...simulator.units import GiB, format_bytes
from ...tutorial.models import parameter_count
from .. import phased_plans as lesson
from .widgets import FIGURE_INCHES, Explorer, choice

WIDTHS, LAYERS, PHASES = (1024, 1536, 2048), (8, 16, 32), (2, 4, 8)


@functools.lru_cache(maxsize=32)
def compare(width: int, layers: int, phases: int, kind: str, liveness: str) -> dict:
    """The phased outcome and the pipelined outcome of one model.

    Raises:
        Error: the layers do not split into the phases' stages, or the liveness is serial-only.
    """
    per_phase = lesson.IPUS if kind == lesson.SERIAL else lesson.IPUS // 2
    chunks = phases * per_phase
    strategy = lesson.phased_strategy(kind, chunks, liveness)
    model = lesson.chunked_model(width, layers, chunks)
    return {"phased": lesson.plan_model(model, strategy),
            "pipelined": lesson.plan_model(model, lesson.pipelined_strategy(chunks)),
            "parameters": parameter_count(model), "chunks": chunks, "layers": layers}


def _fullest(outcome: lesson.Outcome) -> str:
    fullest = max(outcome.memory.ipus, key=lambda m: m.total)
    verdict = "fits" if outcome.fits else "<b style='color:#c62828'>does not fit</b>"
    return (f"{verdict} (fullest IPU {fullest.ipu}: {format_bytes(fullest.total)} of "
            f"{format_bytes(fullest.capacity)})")


def _timing(outcome: lesson.Outcome) -> str:
    if not outcome.fits:
        return "no executable, so no time"
    plan = outcome.plan
    compute = plan.breakdown()["IPU compute"]
    streaming = lesson.streaming_seconds(plan)
    return (f"{plan.call_seconds * 1e3:,.1f} ms per step: compute {compute * 1e3:,.1f} ms, "
            f"exchange and streaming not hidden by compute {streaming * 1e3:,.1f} ms")


def describe(result: dict, phases: int, kind: str, liveness: str) -> str:
    phased, pipelined = result["phased"], result["pipelined"]
    off_chip = max(sum(m.off_chip.values()) for m in phased.memory.ipus)
    stages = result["chunks"] // phases
    return (f"{result['parameters'] / 1e9:.2f}B parameters; {result['layers']} layers in "
            f"{result['chunks']} blocks, one per stage ({phases} phases x {stages} stages). "
            f"<b>{kind}</b>, {phases} phases, Liveness.{liveness}: {_fullest(phased)}; "
            f"{_timing(phased)}; up to {format_bytes(off_chip)} per IPU in streaming memory. "
            f"<br><b>PipelinedExecution</b> on the same {lesson.IPUS} IPUs: "
            f"{_fullest(pipelined)}; {_timing(pipelined)}.")


def draw_comparison(result: dict, figure) -> None:
    """Left: on-chip memory per IPU, phased beside pipelined. Right: each step's time split."""
    memory_ax, time_ax = figure.subplots(1, 2, gridspec_kw={"width_ratios": [3, 2]})
    width = 0.38
    for offset, name, colour in ((-width / 2, "phased", "#1565c0"),
                                 (width / 2, "pipelined", "#9e9e9e")):
        ipus = result[name].memory.ipus
        memory_ax.bar([m.ipu + offset for m in ipus], [m.total / GiB for m in ipus], width,
                      label=name, color=colour)
    capacity = result["phased"].memory.ipus[0].capacity / GiB
    memory_ax.axhline(capacity, color="#c62828", linestyle="--", label="IPU memory")
    memory_ax.set(xlabel="IPU", ylabel="GiB on chip", title="Memory per IPU")
    memory_ax.set_xticks(range(lesson.IPUS))
    memory_ax.set_ylim(0, 1.1 * max(memory_ax.get_ylim()[1], capacity))
    for row, name in enumerate(("phased", "pipelined")):
        plan = result[name].plan
        if plan is None:
            time_ax.text(0, row, "  does not fit", va="center", color="#c62828",
                         fontsize=style.points(figure, style.TEXT_PX))
            continue
        compute = plan.breakdown()["IPU compute"] * 1e3
        rest = plan.call_seconds * 1e3 - compute
        time_ax.barh(row, compute, color="#2e7d32", label="compute")
        time_ax.barh(row, rest, left=compute, color="#f9a825", label="streaming, exchange, host")
    time_ax.set_yticks([0, 1], ["phased", "pipelined"])
    time_ax.set_ylim(1.6, -0.6)  # phased on top, as in the memory panel's order
    time_ax.set(xlabel="ms per step", title="One step")
    for ax in (memory_ax, time_ax):
        style.readable(ax)
    figure.tight_layout()
    style.legend_below(memory_ax)
    handles, labels = time_ax.get_legend_handles_labels()
    if handles:
        style.legend_below(time_ax, handles[:2], labels[:2])
    figure.tight_layout()


def phase_planner(width: int = 1536, layers: int = 16, phases: int = 4,
                  kind: str = lesson.SERIAL, liveness: str = "AlwaysLive") -> Explorer:
    """Phased against pipelined training of one transformer on four IPUs."""
    controls = {
        "width": choice("hidden size", WIDTHS, width),
        "layers": choice("layers", LAYERS, layers),
        "phases": choice("phases", PHASES, phases),
        "kind": choice("strategy", (lesson.SERIAL, lesson.PARALLEL), kind),
        "liveness": choice("liveness", list(lesson.LIVENESS), liveness),
    }

    def compute(width, layers, phases, kind, liveness):
        result = compare(width, layers, phases, kind, liveness)
        return {**result, "text": describe(result, phases, kind, liveness)}

    return Explorer("Phase planner", controls, compute, draw_comparison,
                    figsize=(FIGURE_INCHES, 4))
