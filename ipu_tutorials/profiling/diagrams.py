"""Conceptual diagrams of the course's core ideas, drawn from the simulator's own schedule data.

Each figure calls the function the simulator runs (pipeline_cycles, built on clock_cycles;
pipelined_step and sharded_step with unit costs; phases.program and phases.residency; a
compiled MemoryPlan), so a diagram cannot disagree with what the simulator does.
course/diagrams.py writes them to static/.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.patches import Patch, Rectangle

from ..simulator import phases
from ..simulator.memory import CATEGORIES, IpuMemory
from ..simulator.rules import fill_cycles
from ..simulator.schedule import (Action, Event, StageTimes, pipeline_cycles, pipelined_step,
                                  sharded_step)
from ..simulator.units import format_bytes
from . import style

MIB = 2 ** 20  # the figures' byte unit
DPI = 100  # course/diagrams.py saves them at this resolution
WIDTH = style.width_inches(DPI)  # as wide as the lesson column: text is shown as drawn
KIND_COLOURS = {"F": "#4c78a8", "B": "#f58518", "load": "#bab0ac", "store": "#bab0ac"}
REGION_COLOURS = {"fill": "#e45756", "main": "#54a24b", "drain": "#e45756"}


def _box(ax, x: float, row: int, width: float, label: str, colour: str) -> None:
    ax.add_patch(Rectangle((x, row - 0.4), width, 0.8, facecolor=colour, edgecolor="white"))
    ax.text(x + width / 2, row, label, ha="center", va="center", color="white",
            fontsize=style.points(ax.figure, style.SMALL_PX))


def _rows(ax, count: int, label: str = "IPU") -> None:
    ax.set_yticks(range(count), [f"{label} {i}" for i in range(count)])
    ax.set_ylim(count - 0.5, -0.5)
    style.readable(ax)


def pipeline_regions(n: int, a: int, training: bool = True) -> list[tuple[str, int, int]]:
    """(name, first cycle, end cycle) of fill, main and drain for N stages and A micro-batches."""
    fill, total = fill_cycles(n, training), len(pipeline_cycles(n, a, training))
    return [("fill", 0, fill), ("main", fill, total - fill), ("drain", total - fill, total)]


def staircase_cells(n: int, a: int, training: bool = True) -> dict[tuple[int, int], list[Action]]:
    """(cycle, IPU) -> actions, one stage per IPU: the cells the staircase draws."""
    cells: dict[tuple[int, int], list[Action]] = {}
    for c, cycle in enumerate(pipeline_cycles(n, a, training)):
        for action in cycle:
            cells.setdefault((c, action.stage), []).append(action)
    return cells


def draw_pipeline(n: int = 4, a: int = 8, training: bool = True, ax=None):
    """The pipeline staircase of one training step: F/B per cycle and IPU, fill/main/drain."""
    ax = ax or plt.subplots(figsize=(WIDTH, 2.9), dpi=DPI)[1]
    for (c, ipu), actions in staircase_cells(n, a, training).items():
        for i, action in enumerate(actions):
            width = 1 / len(actions)
            _box(ax, c + i * width, ipu, width, str(action), KIND_COLOURS[action.kind])
    for name, start, end in pipeline_regions(n, a, training):
        if end > start:
            ax.axvspan(start, end, ymin=0.95, ymax=1.0, color=REGION_COLOURS[name], alpha=0.5)
            ax.text((start + end) / 2, -0.55, f"{name}: {end - start} cycles", ha="center",
                    fontsize=style.points(ax.figure, style.SMALL_PX))
    ax.set_xlim(0, len(pipeline_cycles(n, a, training)))
    _rows(ax, n)
    ax.set_ylim(n - 0.5, -0.75)  # room for the fill/main/drain band above IPU 0
    ax.set_xlabel("pipeline cycle")
    ax.set_title(f"Pipelined training step: {n} IPUs, gradient accumulation {a}\n"
                 f"(F = forward, B = backward, digit = micro-batch)", pad=18)
    style.readable(ax)
    ax.figure.tight_layout()
    return ax


def unit_stages(n: int) -> list[StageTimes]:
    """Equal stages, one per IPU: forward 1, backward 2 (the usual backward:forward ratio)."""
    return [StageTimes(ipu=i, forward=1.0, backward=2.0, send=0.0) for i in range(n)]


def _draw_events(ax, events: list[Event]) -> float:
    """A box per forward and backward, labelled with its micro-batch (the colour says which)."""
    for e in events:
        if e.kind in ("F", "B"):
            _box(ax, e.start, e.ipu, e.duration, str(e.micro_batch), KIND_COLOURS[e.kind])
    return max(e.end for e in events)


def draw_sharding_vs_pipelining(n: int = 4, a: int = 4):
    """The same step, sharded and pipelined, on one time axis (the schedule's own events)."""
    fig, axes = plt.subplots(2, 1, figsize=(WIDTH, 4.9), dpi=DPI, sharex=True)
    ends = []
    for ax, (name, step) in zip(axes, (("sharded", sharded_step), ("pipelined", pipelined_step))):
        events, end = step(unit_stages(n), a, True, 0.0, 0)
        ends.append(_draw_events(ax, events))
        _rows(ax, n)
        ax.set_title(f"{name}: {end:g} time units for {a} micro-batches")
        style.readable(ax)
    axes[-1].set_xlim(0, max(ends))
    axes[-1].set_xlabel("time (forward = 1 unit, backward = 2)")
    style.readable(axes[-1])
    fig.tight_layout()
    style.legend_below(axes[-1], [Patch(color=KIND_COLOURS[k]) for k in "FB"],
                       ["forward", "backward"], title="the number in a box: its micro-batch")
    fig.tight_layout()
    return fig


def phase_works(ipus: int = 2, num_phases: int = 3) -> list[phases.PhaseWork]:
    """Stages of equal size: `num_phases` serial phases of `ipus` stages, weights off chip."""
    return [phases.PhaseWork(ipu=i, phase=p, weights=1, gradients=1, forward=1.0, backward=2.0)
            for p in range(num_phases) for i in range(ipus)]


def phase_cells(works: list[phases.PhaseWork], runs: list[phases.Run]) -> dict:
    """(IPU, lane, phase id) -> labels: lane 0 computes (F/B runs), lane 1 streams weights in
    the id before a run and out in the id after it (phases.residency)."""
    cells: dict[tuple[int, int, int], list[str]] = {}
    for run in runs:
        work = works[run.stage]
        cells.setdefault((work.ipu, 0, run.id), []).append(f"{run.kind}{work.phase}")
    for ipu, stage, category, first, last, _ in phases.residency(works, runs):
        if category == "weights":
            phase = works[stage].phase
            cells.setdefault((ipu, 1, first), []).append(f"in {phase}")
            cells.setdefault((ipu, 1, last), []).append(f"out {phase}")
    return cells


def draw_phases(ipus: int = 2, num_phases: int = 3, liveness: int = phases.ALWAYS_LIVE):
    """Serial phased execution: which phase computes at each phase id (F/B + phase), and when
    its weights stream in from streaming memory and back out (phases.program, .residency)."""
    works = phase_works(ipus, num_phases)
    runs = phases.program(works, liveness, False, True)
    fig, ax = plt.subplots(figsize=(WIDTH, 3.2), dpi=DPI)
    for (ipu, lane, x), labels in phase_cells(works, runs).items():
        width = 1 / len(labels)
        for i, label in enumerate(labels):
            colour = KIND_COLOURS[label[0]] if lane == 0 else KIND_COLOURS["load"]
            _box(ax, x + i * width, 2 * ipu + lane, width, label, colour)
    ax.set_xlim(min(x for _, _, x in phase_cells(works, runs)), max(r.id for r in runs) + 2)
    ax.set_yticks(range(2 * ipus), [f"IPU {i} {lane}" for i in range(ipus)
                                    for lane in ("computes", "streams")])
    ax.set_ylim(2 * ipus - 0.5, -0.5)
    ax.set_xlabel("phase id")
    ax.set_title(f"Serial phased execution, Liveness.{phases.LIVENESS_NAMES[liveness]}:\n"
                 f"{num_phases} phases on {ipus} IPUs (F/B + phase; weights in before, out after)")
    style.readable(ax)
    fig.tight_layout()
    return fig


def draw_replication(memories: dict[str, list[IpuMemory]]):
    """Per replica: weights on chip, optimizer state in streaming memory, without and with
    replicated tensor sharding (each replica's first IPU, from compiled memory plans)."""
    fig, axes = plt.subplots(1, len(memories), figsize=(WIDTH, 3.4), dpi=DPI, sharey=True)
    for ax, (title, replicas) in zip(axes, memories.items()):
        for r, m in enumerate(replicas):
            off = m.off_chip.get("optimizer", 0)
            ax.bar(r, m.weights / MIB, color=KIND_COLOURS["F"])
            ax.bar(r, off / MIB, bottom=m.weights / MIB, color=KIND_COLOURS["B"])
            ax.text(r, (m.weights + off) / MIB, format_bytes(off), ha="center", va="bottom",
                    fontsize=style.points(fig, style.SMALL_PX))
        ax.set_xticks(range(len(replicas)), [f"replica {r}" for r in range(len(replicas))])
        ax.set_title(title)
        style.readable(ax)
    axes[0].set_ylabel("MiB")
    axes[0].set_ylim(0, axes[0].get_ylim()[1] * 1.12)  # room for the labels over the bars
    fig.tight_layout()
    style.legend_below(axes[0], [Patch(color=KIND_COLOURS["F"]), Patch(color=KIND_COLOURS["B"])],
                       ["weights (on chip)", "optimizer state (off chip)"])
    fig.tight_layout()
    return fig


def draw_memory(memory: IpuMemory, title: str = "Where memory goes on one IPU"):
    """One IPU's memory plan as a stacked bar against its capacity."""
    fig, ax = plt.subplots(figsize=(WIDTH, 2.6), dpi=DPI)
    left = 0
    colours = plt.get_cmap("tab10").colors
    for i, category in enumerate(CATEGORIES):
        size = getattr(memory, category)
        ax.barh(0, size / MIB, left=left / MIB, color=colours[i % len(colours)], label=category)
        left += size
    ax.axvline(memory.capacity / MIB, color="black", linestyle="--")
    ax.text(memory.capacity / MIB, 0.45, f" capacity {format_bytes(memory.capacity)}",
            fontsize=style.points(fig, style.SMALL_PX))
    ax.set_yticks([])
    ax.set_xlabel("MiB")
    ax.set_title(f"{title}: {format_bytes(memory.total)} of {format_bytes(memory.capacity)}")
    style.readable(ax)
    fig.tight_layout()
    style.legend_below(ax)
    fig.tight_layout()
    return fig
