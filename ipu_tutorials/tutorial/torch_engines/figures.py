"""Schedules side by side: one panel per schedule on a shared time axis, a row per stage, a
box per forward (blue) or backward (orange) labelled with its micro-batch, as the course's
pipeline diagram draws them."""
from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from ...profiling.diagrams import KIND_COLOURS
from ...simulator.schedule import Event

TIME_AXIS = "time (forward = 1 unit, backward = 2 units, every stage alike)"


def draw_schedules(panels: list[tuple[str, str, list[Event]]], tracks: int,
                   figure: Figure | None = None, xlabel: str = TIME_AXIS) -> Figure:
    """Draw each (title, row label, events) panel; returns the figure.

    Args:
        panels: the schedules, top to bottom; events' `ipu` is their row.
        tracks: rows per panel (stages, IPUs or ranks).
        figure: draw into this figure (an explorer's); a new pyplot figure when None.
    """
    figure = figure or plt.figure(figsize=(12, 1.0 + 1.15 * tracks * len(panels) / 2))
    axes = figure.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    end = max(e.end for _, _, events in panels for e in events if e.kind in ("F", "B"))
    for ax, (title, label, events) in zip(axes, panels):
        for e in events:
            if e.kind in ("F", "B"):
                ax.add_patch(Rectangle((e.start, e.ipu - 0.4), e.duration, 0.8,
                                       facecolor=KIND_COLOURS[e.kind], edgecolor="white"))
                if e.duration / end > 0.012:  # a label only where it fits
                    ax.text(e.start + e.duration / 2, e.ipu, str(e.micro_batch), ha="center",
                            va="center", color="white", fontsize=7)
        ax.set_yticks(range(tracks), [f"{label} {i}" for i in range(tracks)])
        ax.set_ylim(tracks - 0.5, -0.5)
        ax.set_title(title, fontsize=10)
    axes[-1].set_xlim(0, end)
    axes[-1].set_xlabel(xlabel)
    axes[0].legend(handles=[Patch(color=KIND_COLOURS["F"], label="forward"),
                            Patch(color=KIND_COLOURS["B"], label="backward")],
                   loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=2, frameon=False, fontsize=8)
    figure.tight_layout()
    return figure
