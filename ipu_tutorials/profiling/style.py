"""The readable sizes of the course's figures: every text at least 9 px where a learner sees it.

A figure wider than the column it is shown in is scaled down to fit, and its text with it:
text px shown = points x dpi / 72 x min(1, COLUMN_PX / figure px). So sizes here are pixels as
shown, and `points` turns them into a figure's points: a figure the course draws is no wider
than the column (FIGURE_PX), and one a lesson makes wider gets larger type in proportion.
"""
from __future__ import annotations

import textwrap

from matplotlib.font_manager import FontProperties
from matplotlib.textpath import text_to_path
from matplotlib.transforms import offset_copy

# The narrowest column a lesson's figure is shown in on a desktop: the course website's lesson
# column in a 1280-px-wide window (708 px; JupyterLab's output area there is 848 px with its
# file browser open). Measured in Chromium, 2026-11-29.
COLUMN_PX = 708
SMALLEST_TEXT_PX = 9
# The course's own figures are a little narrower than the column: a tight bounding box can
# add a few pixels of an outer label to the width.
FIGURE_PX = 690
EXPLORER_DPI = 80  # an explorer's picture is drawn and saved at this resolution

# Pixels as shown. Each is a little above SMALLEST_TEXT_PX, for the pixels a tight box adds.
SMALL_PX = 10  # legends, notes, labels inside boxes
TEXT_PX = 11  # tick labels and axis labels
TITLE_PX = 12


def shrink(figure) -> float:
    """The scale the figure is shown at: 1, or less when it is wider than the column."""
    return min(1.0, COLUMN_PX / (figure.get_figwidth() * figure.dpi))


def points(figure, px: float) -> float:
    """The font size, in points, that `figure` needs to show text `px` pixels high."""
    return px * 72 / figure.dpi / shrink(figure)


def shown_px(figure, inches: float) -> float:
    """How many pixels `inches` of `figure` take where it is shown."""
    return inches * figure.dpi * shrink(figure)


def axes_px(ax) -> float:
    """How wide the axes are where their figure is shown, in pixels."""
    return shown_px(ax.figure, ax.get_position().width * ax.figure.get_figwidth())


def width_inches(dpi: float) -> float:
    """The width of a figure the course draws at `dpi`, in inches."""
    return FIGURE_PX / dpi


def text_width_px(text: str, px: float = SMALL_PX) -> float:
    """How wide `text` is, in pixels, at a size of `px` in matplotlib's font (its longest line)."""
    font = FontProperties(size=px)
    return max((text_to_path.get_text_width_height_descent(line, font, ismath=False)[0]
                for line in text.split("\n")), default=0.0)


def readable(ax, title_px: float = TITLE_PX) -> None:
    """Tick labels and axis labels of `ax` at TEXT_PX, its title at `title_px`, as shown."""
    figure = ax.figure
    ax.tick_params(labelsize=points(figure, TEXT_PX))
    ax.xaxis.label.set_fontsize(points(figure, TEXT_PX))
    ax.yaxis.label.set_fontsize(points(figure, TEXT_PX))
    ax.title.set_fontsize(points(figure, title_px))


def legend_below(ax, handles=None, labels=None, title: str = ""):
    """A legend under the axis's tick labels and label, no wider than the axes: as many
    columns of entries as fit (each as wide as the widest), its title (a note) wrapped to fit.

    Args:
        handles, labels: the entries (the axes' own when None).
        title: a note above the entries.
    Returns:
        The legend.
    """
    figure = ax.figure
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    size, width = points(figure, SMALL_PX), axes_px(ax)
    widest = max((text_width_px(label) for label in labels), default=0.0)
    columns = max(1, min(len(handles), int(width // (widest + 3.2 * SMALL_PX))))
    note = textwrap.fill(title, width=max(30, int(width / text_width_px("x"))))
    below = offset_copy(ax.transAxes, figure, y=-_under_the_axis_points(ax), units="points")
    return ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0),
                     bbox_transform=below, ncol=columns, frameon=False, fontsize=size,
                     title=note or None, title_fontsize=size, columnspacing=1.2,
                     handlelength=1.5)


def _under_the_axis_points(ax) -> float:
    """How far the x axis's tick labels and label reach below the axes, in points."""
    axis = ax.xaxis
    ticks = [t for t in axis.get_ticklabels() if t.get_text()] or axis.get_ticklabels()
    shown = ticks and axis.get_tick_params().get("labelbottom", True)
    tick = ticks[0].get_fontsize() if shown else 0
    label = axis.label.get_fontsize() if axis.label.get_text() else 0
    major = axis.get_major_ticks()
    marks = major[0].get_tick_padding() + major[0].get_pad() if major else 7
    return 1.2 * (tick + label) + marks + axis.labelpad + 2
