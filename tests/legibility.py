"""How a figure reads where a learner sees it: the size of every text it draws, in pixels at the
width it is shown; whether a legend covers what is plotted; whether texts are drawn over each
other.

A figure wider than the column it is shown in is scaled down to the column, so its text shrinks:
text px shown = size in points x dpi / 72 x min(1, column px / PNG px). The checks look at the
figure as it is saved (bbox_inches="tight", as the explorers and the inline backend save it).
"""
from __future__ import annotations

import io
from unittest import mock

from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg
from matplotlib.collections import Collection
from matplotlib.legend import Legend
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.transforms import Bbox
from PIL import Image

from ipu_tutorials.profiling.style import COLUMN_PX, SMALLEST_TEXT_PX


def saved_texts(figure, dpi: float) -> tuple[int, list[tuple[str, float]], list[tuple[str, Bbox]]]:
    """Save `figure` as a PNG at `dpi` (tight box). Returns its width in px, every text line the
    renderer drew with its size in px at the PNG's own scale, and each text artist drawn with
    its box."""
    drawn: list[tuple[str, float]] = []
    boxes: dict[int, tuple[str, Bbox]] = {}
    draw_text = RendererAgg.draw_text

    def record(renderer, gc, x, y, s, prop, angle, ismath=False, mtext=None):
        if s.strip() and not _clipped_away(renderer, mtext):
            drawn.append((s, prop.get_size_in_points() * renderer.dpi / 72))
            if mtext is not None:
                boxes[id(mtext)] = (mtext.get_text(), mtext.get_window_extent(renderer))
        return draw_text(renderer, gc, x, y, s, prop, angle, ismath, mtext)

    buffer = io.BytesIO()
    with mock.patch.object(RendererAgg, "draw_text", record):
        figure.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    return Image.open(io.BytesIO(buffer.getvalue())).width, drawn, list(boxes.values())


def _clipped_away(renderer, text) -> bool:
    """A text clipped to its axes and wholly outside them is drawn but never seen."""
    if text is None or not text.get_clip_on() or text.get_clip_box() is None:
        return False
    box = text.get_window_extent(renderer)
    return not box.overlaps(text.get_clip_box())


def problems(figure, dpi: float) -> str:
    """What reads badly in `figure` saved at `dpi`, a finding a line ("" when nothing does):
    text under SMALLEST_TEXT_PX where shown, a legend over plotted data, texts over each other."""
    saved = saved_texts(figure, dpi)
    return "\n".join([f"too small: {t}" for t in too_small(figure, dpi, saved)]
                     + legends_over_data(figure)
                     + [f"texts overlap: {t}" for t in overlapping_texts(figure, dpi, saved)])


def shown_text_px(figure, dpi: float, saved=None) -> list[tuple[str, float]]:
    """(text, px shown) for every text `figure` draws, scaled to the column it is shown in."""
    width, drawn, _ = saved or saved_texts(figure, dpi)
    shrink = min(1.0, COLUMN_PX / width)
    return [(text, px * shrink) for text, px in drawn]


def too_small(figure, dpi: float, saved=None) -> list[str]:
    """Each text smaller than SMALLEST_TEXT_PX where it is shown, as 'text: px'."""
    return [f"{text!r}: {px:.1f} px" for text, px in shown_text_px(figure, dpi, saved)
            if px < SMALLEST_TEXT_PX - 1e-6]


def overlapping_texts(figure, dpi: float, saved=None) -> list[str]:
    """Each pair of texts drawn over each other (tick labels squeezed together, a label on a
    title), as "'a' on 'b'"."""
    _, _, boxes = saved or saved_texts(figure, dpi)
    return [f"{a!r} on {b!r}" for i, (a, box_a) in enumerate(boxes) for b, box_b in boxes[i + 1:]
            if _area_overlap(box_a, box_b)]


def legends_over_data(figure) -> list[str]:
    """Each legend that covers plotted data (bars, boxes, lines, markers) of its figure, as
    'legend title or first entry over what'. Computed from the artists' window extents."""
    canvas = figure.canvas
    if not isinstance(canvas, FigureCanvasAgg):  # an explorer's figure has no canvas of its own
        canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    legends = [a.get_legend() for a in figure.axes if a.get_legend()] + list(figure.legends)
    found = []
    for legend in legends:
        if not legend.get_visible():
            continue
        box = legend.get_window_extent(renderer)
        for ax in figure.axes:
            for artist in _data_artists(ax):
                if _covers(artist, box, renderer):
                    found.append(f"the legend {_name(legend)} covers {type(artist).__name__} "
                                 f"{artist.get_label()!r} of the axes {ax.get_title()!r}")
                    break
    return found


def _name(legend: Legend) -> str:
    texts = [t.get_text() for t in legend.get_texts() if t.get_visible()]
    return repr(legend.get_title().get_text() or (texts[0] if texts else ""))


def _data_artists(ax) -> list:
    return [a for a in (*ax.patches, *ax.lines, *ax.collections)
            if a.get_visible() and a.get_alpha() != 0]


def _seen_part(artist, box: Bbox) -> Bbox | None:
    """The part of `box` where the artist can be seen: inside its clip box, if it is clipped."""
    clip = artist.get_clip_box() if artist.get_clip_on() else None
    return Bbox.intersection(box, clip) if clip is not None else box


def _covers(artist, box: Bbox, renderer) -> bool:
    region = _seen_part(artist, box)
    if region is None or region.width <= 0 or region.height <= 0:
        return False
    if isinstance(artist, Line2D):
        return _line_covers(artist, region)
    if isinstance(artist, Collection):
        transform = artist.get_transform()
        return any(_area_overlap(path.get_extents(transform), region)
                   for path in artist.get_paths())
    if isinstance(artist, Patch):
        return _area_overlap(artist.get_window_extent(renderer), region)
    return False


def _area_overlap(a: Bbox, b: Bbox) -> bool:
    """Overlap of positive area (bars that only touch the legend's edge do not count)."""
    overlap = Bbox.intersection(a, b)
    return overlap is not None and overlap.width > 0.5 and overlap.height > 0.5


def _line_covers(line: Line2D, region: Bbox) -> bool:
    path = line.get_transform().transform_path(line.get_path())
    if (line.get_linestyle() not in ("None", "", " ") and len(path.vertices) > 1
            and path.intersects_bbox(region, filled=False)):
        return True
    if line.get_marker() in (None, "None", "", " "):
        return False
    reach = line.get_markersize() * line.figure.dpi / 72 / 2
    grown = region.expanded(1, 1).padded(reach)
    return any(grown.contains(x, y) for x, y in path.vertices)
