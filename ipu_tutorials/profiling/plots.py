"""Matplotlib pictures of a simulated run: the timeline per IPU and the memory plan per IPU."""
from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.ticker import MaxNLocator
from matplotlib.transforms import blended_transform_factory

from ..simulator.memory import CATEGORIES
from ..simulator.schedule import HOST_DATA_TRACK, HOST_TRACK, Event
from ..simulator.timeline import pipeline_parts
from ..simulator.units import format_bytes
from . import style

KIND_COLOURS = {"F": "#4caf50", "B": "#e53935", "update": "#8e24aa", "copy": "#9e9e9e",
                "stream": "#fb8c00", "allreduce": "#1e88e5", "host": "#424242",
                "data": "#bdbdbd", "handover": "#8c8c8c"}
KIND_LABELS = {"F": "forward", "B": "backward", "update": "weight update", "copy": "inter-IPU copy",
               "stream": "streaming memory", "allreduce": "all-reduce", "host": "host I/O",
               "data": "host data preparation", "handover": "host's input hand-over"}
PART_COLOURS = {"fill": "#81c784", "main": "#616161", "flush": "#e57373"}
MEMORY_COLOURS = dict(zip(CATEGORIES, ("#90a4ae", "#1e88e5", "#43a047", "#8e24aa", "#fdd835",
                                       "#fb8c00", "#6d4c41", "#e57373")))


def _time_unit(seconds: float) -> tuple[str, float]:
    if seconds >= 1e-1:
        return "s", 1.0
    if seconds >= 1e-4:
        return "ms", 1e3
    return "µs", 1e6


def _duration_text(seconds: float) -> str:
    unit, scale = _time_unit(seconds)
    return f"{seconds * scale:,.2f} {unit}"


def plot_timeline(events: list[Event], num_ipus: int, ax=None, steps: int | None = None,
                  title: str | None = None, label_micro_batches: bool = True,
                  show_host: bool = True, window: tuple[float, float] | None = None):
    """Draw events as boxes, a row per IPU (and, with show_host, the host's rows).

    The axis spans the whole call, unless `steps` is given or the host's rows are hidden:
    then it spans the device's work, as a profile viewer zoomed on it would, drawn broken at
    its left end, and the note over the legend states the host's work before it in numbers.
    A pipelined step's fill, main and flush are marked above the rows. Kinds that overlap on
    one row (the host's data preparation beside its input hand-over) get a lane each.

    Args:
        steps: draw only the first `steps` device iterations (without the host's data
            preparation, which spans the whole call).
        label_micro_batches: write the micro-batch number in boxes wide enough to hold it.
        show_host: draw the host's rows: its I/O, and its data preparation and input hand-over.
        window: (start, end) in simulated seconds: the part of the call to draw.
    Returns:
        The matplotlib Axes.
    """
    call_end = max((e.end for e in events), default=0.0)
    shown = events if steps is None else [e for e in events if (e.step is None or e.step < steps)
                                          and e.ipu != HOST_DATA_TRACK]
    data = [HOST_DATA_TRACK] if any(e.ipu == HOST_DATA_TRACK for e in shown) else []
    rows = list(range(num_ipus)) + ([HOST_TRACK, *data] if show_host else [])
    start, end = window or _window(shown, num_ipus, device=steps is not None or not show_host,
                                   show_host=show_host)
    if ax is None:
        _, ax = _column_figure(rows=len(rows), other_px=170 if show_host else 150)
    unit, scale = _time_unit(end)
    y_of = {ipu: i for i, ipu in enumerate(rows)}
    _draw_event_boxes(ax, shown, y_of, scale)
    parts = _mark_parts(ax, pipeline_parts(shown), start, end, scale)
    _time_axis(ax, rows, start * scale, end * scale, unit)
    style.legend_below(ax, title=_before_window(events, start, call_end))
    _finish(ax, title, pad_px=26 if parts else 6)
    if label_micro_batches:  # once the layout is done: a label shows where its box is wide enough
        _label_micro_batches(ax, [e for e in shown if e.ipu in y_of and start <= e.start < end],
                             y_of, scale)
    return ax


def _column_figure(rows: int, other_px: float, **kwargs):
    """A new pyplot figure as wide as the course's figures: `rows` rows of about 30 px each,
    and `other_px` for the title, the axis, the legend and its note."""
    dpi = plt.rcParams["figure.dpi"]
    return plt.subplots(figsize=(style.width_inches(dpi), (30 * rows + other_px) / dpi), **kwargs)


def _time_axis(ax, rows: list[int], left: float, right: float, unit: str) -> None:
    """A row label per IPU and host track, top down; the time axis, broken at its left end
    when it does not start at 0."""
    names = {HOST_TRACK: "host", HOST_DATA_TRACK: "host data"}
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([names.get(r, f"IPU {r}") for r in rows])
    ax.invert_yaxis()
    ax.set_xlim(left, right)
    ax.set_xlabel(f"simulated time since the call began ({unit})" if left > 0 else
                  f"simulated time ({unit})")
    ax.xaxis.set_major_locator(MaxNLocator(nbins=_tick_count(ax)))
    style.readable(ax)
    if left > 0:  # two short slashes across each end of the axis's left edge
        marks = dict(transform=ax.transAxes, color="black", clip_on=False, linewidth=1)
        for y in (0.0, 1.0):
            ax.plot((-0.008, 0.008), (y - 0.03, y + 0.03), **marks)


def _tick_count(ax) -> int:
    """As many time ticks as leave room between their labels ("12.345" at TEXT_PX)."""
    return max(3, int(style.axes_px(ax) // (2 * style.text_width_px("12.345", style.TEXT_PX))))


def _label_micro_batches(ax, events: list[Event], y_of: dict, scale: float) -> None:
    """The micro-batch number in each box, shown while the box is wide enough for it where the
    figure is shown: visibility follows the limits (a shared axis or a later set_xlim)."""
    size = style.points(ax.figure, style.SMALL_PX)
    labels = [(e.duration * scale, ax.text((e.start + e.duration / 2) * scale, y_of[e.ipu],
                                           str(e.micro_batch), ha="center", va="center",
                                           fontsize=size, color="white", clip_on=True))
              for e in events if e.micro_batch is not None and e.duration > 0]

    def fit(axes) -> None:
        low, high = axes.get_xlim()
        shown = style.axes_px(axes)
        for width, text in labels:
            needed = style.text_width_px(text.get_text()) + 4  # a little space either side
            text.set_visible(width / (high - low) * shown > needed)

    fit(ax)
    ax.callbacks.connect("xlim_changed", fit)


def _window(events: list[Event], num_ipus: int, device: bool,
            show_host: bool) -> tuple[float, float]:
    """The time span to draw: the whole call, or (device) the device's work and, with the
    host's rows, the host I/O of the steps drawn."""
    if not device:
        return 0.0, max((e.end for e in events), default=1.0) or 1.0
    shown = [e for e in events if e.duration > 0 and (
        0 <= e.ipu < num_ipus or (show_host and e.ipu == HOST_TRACK and e.step is not None))]
    if not shown:
        return 0.0, 1.0
    return min(e.start for e in shown), max(e.end for e in shown)


def _before_window(events: list[Event], start: float, call_end: float) -> str:
    """What the call did before `start`, in numbers: the host's work by kind (two kinds
    that ran side by side on one row are joined by "alongside")."""
    if start <= 0:
        return ""
    head = f"not drawn: the call's first {_duration_text(start)} of {_duration_text(call_end)}"
    if any(e.ipu >= 0 and e.start < start * (1 - 1e-9) for e in events):
        return f"{head} (the host's work and the step's earlier cycles)"
    rows = []
    for row in (HOST_TRACK, HOST_DATA_TRACK):
        done = [e for e in events if e.ipu == row and e.duration > 0
                and e.end <= start * (1 + 1e-9)]
        kinds: dict[str, float] = {}
        for e in done:
            kinds[e.kind] = kinds.get(e.kind, 0.0) + e.duration
        boxes = {(row, e.kind): [(x.start, x.duration) for x in done if x.kind == e.kind]
                 for e in done}
        joint = " alongside " if _kinds_overlap(row, list(kinds), boxes) else ", "
        rows.append(joint.join(f"{KIND_LABELS.get(kind, kind)} {_duration_text(seconds)}"
                               for kind, seconds in kinds.items()))
    work = ", ".join(row for row in rows if row)
    return f"{head}: {work}" if work else head


def _mark_parts(ax, parts: list[tuple[str, float, float]], start: float, end: float,
                scale: float) -> bool:
    """Brackets above the rows for a pipelined step's fill, main and flush, clipped to the
    window; named, with dotted borders, where wide enough to read. True if any was drawn."""
    above = blended_transform_factory(ax.transData, ax.transAxes)
    drawn = False
    for name, left, right in parts:
        left, right = max(left, start), min(right, end)
        width = (right - left) / (end - start)
        if width < 0.01:  # too narrow to see (one of many steps in a whole call)
            continue
        drawn = True
        ax.plot((left * scale, right * scale), (1.015, 1.015), transform=above, clip_on=False,
                color=PART_COLOURS[name], linewidth=4, solid_capstyle="butt")
        if width < 0.04:
            continue
        ax.text((left + right) / 2 * scale, 1.035, name, transform=above, ha="center",
                va="bottom", fontsize=style.points(ax.figure, style.SMALL_PX))
        for x in (left, right):
            if start < x < end:
                ax.axvline(x * scale, color="#9e9e9e", linewidth=0.6, linestyle=":")
    return drawn


def _draw_event_boxes(ax, events: list[Event], y_of: dict, scale: float) -> list:
    """One broken bar per (row, kind): thousands of events draw quickly. Kinds that overlap
    in time on one row (the host's data preparation and its input hand-over) get a lane each.
    Returns the kinds drawn, in order."""
    boxes: dict[tuple[int, str], list[tuple[float, float]]] = {}
    for e in events:
        if e.ipu in y_of and e.duration > 0:
            boxes.setdefault((e.ipu, e.kind), []).append((e.start * scale, e.duration * scale))
    labelled: list = []
    for (ipu, kind), spans in boxes.items():
        lane, lanes = _lane(ipu, kind, boxes)
        height = 0.8 / lanes
        label = None if kind in labelled else KIND_LABELS.get(kind, kind)
        if kind not in labelled:
            labelled.append(kind)
        ax.broken_barh(spans, (y_of[ipu] - 0.4 + height * lane, height),
                       facecolors=KIND_COLOURS.get(kind, "#000000"), edgecolor="white",
                       linewidth=0.5, label=label)
    return labelled


def _lane(row: int, kind: str, boxes: dict) -> tuple[int, int]:
    """(the lane of `kind` on `row`, the row's lanes): one lane per kind when two kinds
    overlap in time on the row, else a single lane."""
    kinds = [k for (ipu, k) in boxes if ipu == row]
    return (kinds.index(kind), len(kinds)) if _kinds_overlap(row, kinds, boxes) else (0, 1)


def _kinds_overlap(row: int, kinds: list[str], boxes: dict) -> bool:
    """Whether boxes of two different kinds overlap on `row` (a sweep in time order; a
    rounding error between back-to-back boxes is not an overlap)."""
    spans = sorted((start, width, kind) for kind in kinds for start, width in boxes[(row, kind)])
    ends: dict[str, float] = {}
    for start, width, kind in spans:
        if any(end - start > 1e-6 * width for other, end in ends.items() if other != kind):
            return True
        ends[kind] = max(ends.get(kind, start), start + width)
    return False


def _finish(ax, title: str | None, pad_px: float = 6.0):
    if title:
        ax.set_title(title, pad=style.points(ax.figure, pad_px),
                     fontsize=style.points(ax.figure, style.TITLE_PX))
    ax.figure.tight_layout()
    return ax


def _row(m) -> dict:
    return m.as_dict() if hasattr(m, "as_dict") else m


def plot_memory(memory: list, ax=None, title: str | None = None, unit: str = "MiB",
                zoom: bool = False):
    """Stacked bars of each IPU's memory plan, with its capacity; an IPU over capacity is marked.

    Args:
        memory: IpuMemory objects or their as_dict() rows.
        zoom: scale the axis to the bars instead of the capacity (for small models).
    Returns:
        The matplotlib Axes.
    """
    rows = [_row(m) for m in memory]
    scale = {"KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}[unit]
    if ax is None:
        _, ax = _column_figure(rows=len(rows), other_px=150)
    _stack_memory_bars(ax, rows, scale)
    capacity = max(r["capacity"] for r in rows) / scale
    small = style.points(ax.figure, style.SMALL_PX)
    if zoom:
        ax.set_xlim(0, 1.15 * max(r["total"] for r in rows) / scale)
        ax.text(1.0, 1.02, f"capacity {capacity:,.0f} {unit} per IPU (off the scale)",
                transform=ax.transAxes, ha="right", fontsize=small)
    else:
        ax.axvline(capacity, color="black", linestyle="--", linewidth=1)
        ax.text(capacity, -0.6, f" capacity {capacity:,.0f} {unit}", va="bottom", fontsize=small)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"IPU {r['ipu']}" for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel(f"memory ({unit})")
    style.readable(ax)
    style.legend_below(ax)
    return _finish(ax, title, pad_px=16)  # above the capacity's label


def _stack_memory_bars(ax, rows: list[dict], scale: float) -> None:
    """A bar per IPU, one segment per category; an IPU over capacity is marked."""
    for y, row in enumerate(rows):
        left = 0.0
        for category in CATEGORIES:
            width = row[category] / scale
            ax.barh(y, width, left=left, color=MEMORY_COLOURS[category],
                    label=category if y == 0 else None, edgecolor="white", linewidth=0.4)
            left += width
        if row["total"] > row["capacity"]:
            ax.text(left, y, "  out of memory", va="center", color="#c62828", fontweight="bold",
                    fontsize=style.points(ax.figure, style.TEXT_PX))


def plot_placement(stages: list[dict], edges: list[dict], ax=None, title: str | None = None):
    """Blocks drawn inside their IPUs, with the activation bytes each stage sends on.

    Args:
        stages: rows like {"index", "ipu", "blocks"} (`Report.summary["placement"]["stages"]`).
        edges: rows like {"from", "to", "bytes"} between blocks ("(host)" for inputs).
    Returns:
        The matplotlib Axes.
    """
    ipus = sorted({s["ipu"] for s in stages})
    if ax is None:
        dpi = plt.rcParams["figure.dpi"]
        _, ax = plt.subplots(figsize=(style.width_inches(dpi), 260 / dpi))
    column = {ipu: i for i, ipu in enumerate(ipus)}
    for ipu in ipus:
        _draw_ipu(ax, column[ipu] * 2.6, ipu, stages)
    block_ipu = {b: s["ipu"] for s in stages for b in s["blocks"]}
    sent: dict[tuple[int, int], int] = {}
    for edge in edges:
        src, dst = block_ipu.get(edge["from"]), block_ipu.get(edge["to"])
        if src is not None and dst is not None and src != dst:
            sent[(src, dst)] = sent.get((src, dst), 0) + edge["bytes"]
    for (src, dst), size in sent.items():
        _draw_transfer(ax, column[src] * 2.6, column[dst] * 2.6, size)
    ax.set_xlim(-0.2, 2.6 * len(ipus) - 0.6)
    ax.set_ylim(-0.1, 2.6)
    ax.axis("off")
    ax.set_title(title or "Placement: blocks in stages on IPUs (arrows: activations per micro-batch)",
                 fontsize=style.points(ax.figure, style.TITLE_PX))
    return ax


def _draw_ipu(ax, x: float, ipu: int, stages: list[dict]) -> None:
    """An IPU's box at `x` with its blocks stacked inside, each labelled with its stage."""
    ax.add_patch(plt.Rectangle((x, 0), 1.8, 2.2, facecolor="#eceff1", edgecolor="#455a64"))
    ax.text(x + 0.9, 2.32, f"IPU {ipu}", ha="center", fontweight="bold",
            fontsize=style.points(ax.figure, style.TEXT_PX))
    blocks = [(s["index"], b) for s in stages if s["ipu"] == ipu for b in s["blocks"]]
    height = 2.0 / max(len(blocks), 1)
    for row, (stage, block) in enumerate(blocks):
        y = 2.1 - (row + 1) * height
        ax.add_patch(plt.Rectangle((x + 0.15, y + 0.05), 1.5, height - 0.1,
                                   facecolor=KIND_COLOURS["F"], alpha=0.35, edgecolor="none"))
        ax.text(x + 0.9, y + height / 2, f"{block}\nstage {stage}", ha="center", va="center",
                fontsize=style.points(ax.figure, style.SMALL_PX))


def _draw_transfer(ax, src_x: float, dst_x: float, size: int) -> None:
    """An arrow from one IPU's box to another's: forward above, backward below."""
    x0, x1 = src_x + 1.8, dst_x
    forward = x1 > x0
    start, end = (x0, x1) if forward else (src_x, dst_x + 1.8)
    y = 1.1 if forward else 0.5
    ax.annotate("", xy=(end, y), xytext=(start, y),
                arrowprops=dict(arrowstyle="->", color="#455a64"))
    ax.text((start + end) / 2, y + 0.08, format_bytes(size), ha="center",
            fontsize=style.points(ax.figure, style.SMALL_PX))
