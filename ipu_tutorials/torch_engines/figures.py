"""Schedules side by side: one panel per schedule on a shared time axis, a row per stage, a
box per forward (blue) or backward (orange) labelled with its micro-batch, as the course's
pipeline diagram draws them."""
from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from ..profiling import style
from ..profiling.diagrams import KIND_COLOURS
from ..simulator.schedule import Event

TIME_AXIS = "time (forward = 1 unit, backward = 2 units, every stage alike)"


def draw_schedules(panels: list[tuple[str, str, list[Event]]], tracks: int,
                   figure: Figure | None = None, xlabel: str = TIME_AXIS) -> Figure:
    """Draw each (title, row label, events) panel; returns the figure.

    Args:
        panels: the schedules, top to bottom; events' `ipu` is their row.
        tracks: rows per panel (stages, IPUs or ranks).
        figure: draw into this figure (an explorer's); a new pyplot figure when None.
    """
    if figure is None:
        dpi = plt.rcParams["figure.dpi"]  # about 24 px a row, and room for titles and the axis
        figure = plt.figure(figsize=(style.width_inches(dpi),
                                     (24 * tracks * len(panels) + 50 * len(panels) + 100) / dpi))
    axes = figure.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    end = max(e.end for _, _, events in panels for e in events if e.kind in ("F", "B"))
    for ax, (title, label, events) in zip(axes, panels):
        for e in events:
            if e.kind in ("F", "B"):
                ax.add_patch(Rectangle((e.start, e.ipu - 0.4), e.duration, 0.8,
                                       facecolor=KIND_COLOURS[e.kind], edgecolor="white"))
        ax.set_yticks(range(tracks), [f"{label} {i}" for i in range(tracks)])
        ax.set_ylim(tracks - 0.5, -0.5)
        ax.set_title(title)
        style.readable(ax)
    axes[-1].set_xlim(0, end)
    axes[-1].set_xlabel(xlabel)
    figure.tight_layout()
    style.legend_below(axes[-1], [Patch(color=KIND_COLOURS["F"]), Patch(color=KIND_COLOURS["B"])],
                       ["forward", "backward"])
    figure.tight_layout()
    for ax, (_, _, events) in zip(axes, panels):  # once the layout is done
        _label_micro_batches(ax, [e for e in events if e.kind in ("F", "B")], end)
    return figure


def _label_micro_batches(ax, events: list[Event], end: float) -> None:
    """The micro-batch number in each box wide enough for it where the figure is shown."""
    shown = style.axes_px(ax)
    for e in events:
        label = str(e.micro_batch)
        if e.duration / end * shown > style.text_width_px(label) + 4:
            ax.text(e.start + e.duration / 2, e.ipu, label, ha="center", va="center",
                    color="white", fontsize=style.points(ax.figure, style.SMALL_PX))
