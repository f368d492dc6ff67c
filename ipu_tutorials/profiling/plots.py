"""Matplotlib pictures of a simulated run: the timeline per IPU and the memory plan per IPU."""
from __future__ import annotations

import matplotlib.pyplot as plt

from ..simulator.memory import CATEGORIES
from ..simulator.schedule import HOST_DATA_TRACK, HOST_TRACK, Event
from ..simulator.units import format_bytes

KIND_COLOURS = {"F": "#4caf50", "B": "#e53935", "update": "#8e24aa", "copy": "#9e9e9e",
                "stream": "#fb8c00", "allreduce": "#1e88e5", "host": "#424242",
                "data": "#bdbdbd"}
KIND_LABELS = {"F": "forward", "B": "backward", "update": "weight update", "copy": "inter-IPU copy",
               "stream": "streaming memory", "allreduce": "all-reduce", "host": "host I/O",
               "data": "host data preparation"}
MEMORY_COLOURS = dict(zip(CATEGORIES, ("#90a4ae", "#1e88e5", "#43a047", "#8e24aa", "#fdd835",
                                       "#fb8c00", "#6d4c41", "#e57373")))


def _time_unit(seconds: float) -> tuple[str, float]:
    if seconds >= 1e-1:
        return "s", 1.0
    if seconds >= 1e-4:
        return "ms", 1e3
    return "µs", 1e6


def plot_timeline(events: list[Event], num_ipus: int, ax=None, steps: int | None = None,
                  title: str | None = None, label_micro_batches: bool = True,
                  show_host: bool = True):
    """Draw events as boxes, a row per IPU (and one for the host).

    Args:
        steps: draw only the first `steps` device iterations (without the host's data
            preparation, which spans the whole call).
        label_micro_batches: write the micro-batch number in boxes wide enough to hold it.
    Returns:
        The matplotlib Axes.
    """
    if steps is not None:
        events = [e for e in events if e.step is None or e.step < steps]
        last = max((e.end for e in events if e.step is not None), default=0.0)
        events = [e for e in events if e.start <= last and e.ipu != HOST_DATA_TRACK]
    if ax is None:
        _, ax = plt.subplots(figsize=(11, 0.55 * (num_ipus + show_host) + 1.4))
    data = [HOST_DATA_TRACK] if any(e.ipu == HOST_DATA_TRACK for e in events) else []
    rows = list(range(num_ipus)) + ([HOST_TRACK, *data] if show_host else [])
    end = max((e.end for e in events if e.ipu in rows), default=1.0) or 1.0
    unit, scale = _time_unit(end)
    y_of = {ipu: i for i, ipu in enumerate(rows)}
    labelled = _draw_event_boxes(ax, events, y_of, scale)
    if label_micro_batches:
        for e in events:
            if e.ipu in y_of and e.micro_batch is not None and e.duration / end > 0.012:
                ax.text((e.start + e.duration / 2) * scale, y_of[e.ipu], str(e.micro_batch),
                        ha="center", va="center", fontsize=7, color="white")
    ax.set_yticks(range(len(rows)))
    names = {HOST_TRACK: "host", HOST_DATA_TRACK: "host data"}
    ax.set_yticklabels([names.get(r, f"IPU {r}") for r in rows])
    ax.invert_yaxis()
    ax.set_xlim(0, end * scale)
    ax.set_xlabel(f"simulated time ({unit})")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.28 if num_ipus < 4 else -0.18),
              ncol=len(labelled), frameon=False, fontsize=8)
    return _finish(ax, title)


def _draw_event_boxes(ax, events: list[Event], y_of: dict, scale: float) -> set:
    """One broken bar per (row, kind): thousands of events draw quickly. Returns the kinds."""
    boxes: dict[tuple[int, str], list[tuple[float, float]]] = {}
    for e in events:
        if e.ipu in y_of and e.duration > 0:
            boxes.setdefault((e.ipu, e.kind), []).append((e.start * scale, e.duration * scale))
    labelled = set()
    for (ipu, kind), spans in boxes.items():
        label = None if kind in labelled else KIND_LABELS.get(kind, kind)
        labelled.add(kind)
        ax.broken_barh(spans, (y_of[ipu] - 0.4, 0.8), facecolors=KIND_COLOURS.get(kind, "#000000"),
                       edgecolor="white", linewidth=0.5, label=label)
    return labelled


def _finish(ax, title: str | None):
    if title:
        ax.set_title(title)
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
        _, ax = plt.subplots(figsize=(9, 0.5 * len(rows) + 1.8))
    _stack_memory_bars(ax, rows, scale)
    capacity = max(r["capacity"] for r in rows) / scale
    if zoom:
        ax.set_xlim(0, 1.15 * max(r["total"] for r in rows) / scale)
        ax.text(1.0, 1.02, f"capacity {capacity:,.0f} {unit} per IPU (off the scale)",
                transform=ax.transAxes, ha="right", fontsize=8)
    else:
        ax.axvline(capacity, color="black", linestyle="--", linewidth=1)
        ax.text(capacity, -0.6, f" capacity {capacity:,.0f} {unit}", va="bottom", fontsize=8)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"IPU {r['ipu']}" for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel(f"memory ({unit})")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.25 if len(rows) < 4 else -0.15),
              ncol=4, frameon=False, fontsize=8)
    return _finish(ax, title)


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
            ax.text(left, y, "  out of memory", va="center", color="#c62828", fontweight="bold")


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
        _, ax = plt.subplots(figsize=(2.6 * len(ipus) + 1, 2.8))
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
                 fontsize=9)
    return ax


def _draw_ipu(ax, x: float, ipu: int, stages: list[dict]) -> None:
    """An IPU's box at `x` with its blocks stacked inside, each labelled with its stage."""
    ax.add_patch(plt.Rectangle((x, 0), 1.8, 2.2, facecolor="#eceff1", edgecolor="#455a64"))
    ax.text(x + 0.9, 2.32, f"IPU {ipu}", ha="center", fontweight="bold")
    blocks = [(s["index"], b) for s in stages if s["ipu"] == ipu for b in s["blocks"]]
    height = 2.0 / max(len(blocks), 1)
    for row, (stage, block) in enumerate(blocks):
        y = 2.1 - (row + 1) * height
        ax.add_patch(plt.Rectangle((x + 0.15, y + 0.05), 1.5, height - 0.1,
                                   facecolor=KIND_COLOURS["F"], alpha=0.35, edgecolor="none"))
        ax.text(x + 0.9, y + height / 2, f"{block}\nstage {stage}", ha="center", va="center",
                fontsize=8)


def _draw_transfer(ax, src_x: float, dst_x: float, size: int) -> None:
    """An arrow from one IPU's box to another's: forward above, backward below."""
    x0, x1 = src_x + 1.8, dst_x
    forward = x1 > x0
    start, end = (x0, x1) if forward else (src_x, dst_x + 1.8)
    y = 1.1 if forward else 0.5
    ax.annotate("", xy=(end, y), xytext=(start, y),
                arrowprops=dict(arrowstyle="->", color="#455a64"))
    ax.text((start + end) / 2, y + 0.08, format_bytes(size), ha="center", fontsize=7)
