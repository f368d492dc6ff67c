"""The explorer widget: controls, a summary computed by the simulator, and a figure.

Its stored output also carries a static picture (the summary and the first figure as HTML and
PNG) beside the widget view, so a notebook opened without a kernel, untrusted, exported to HTML
or rendered by GitHub still shows the explorer, with a line saying that running the cell brings
its controls; a live kernel draws the widget instead.
"""
from __future__ import annotations

import base64
import html
import io
import re
from typing import Callable

import ipywidgets as widgets
from IPython.display import display
from matplotlib.figure import Figure

from ...errors import Error
from ...profiling.style import EXPLORER_DPI, width_inches

STATIC_NOTE = "A picture of the explorer: run this cell to bring its controls."
# A slider track gives each value a few pixels at best: past this many values, a number box
# beside it reaches any value (typed, or stepped with the arrows).
MOST_SLIDER_VALUES = 16
# An explorer's figure is as wide as the lesson column it is shown in (profiling/style.py), so
# its text is shown at the size it is drawn.
FIGURE_INCHES = width_inches(EXPLORER_DPI)


class Explorer:
    """Recomputes `compute(**control values)` on every change, then shows its text and figure.

    compute returns a dict with at least "text" (HTML); draw(result, figure) draws into a
    matplotlib Figure. Figures are not registered with pyplot, so only the widget shows them.
    A broken rule (poptorch.Error) is shown as the explorer's text, not raised.
    """

    def __init__(self, title: str, controls: dict[str, widgets.Widget],
                 compute: Callable[..., dict], draw: Callable[[dict, Figure], None],
                 figsize: tuple[float, float] = (FIGURE_INCHES, 3.6)):
        self.title, self.controls = title, controls
        self.compute, self.draw, self.figsize = compute, draw, figsize
        # The classes name the parts for style sheets and the browser tests.
        self.summary = widgets.HTML()
        self.summary.add_class("ipu-explorer-summary")
        self.output = widgets.Output()
        self.output.add_class("ipu-explorer-figure")
        self.result: dict = {}
        self.figure: Figure | None = None
        self.widget = widgets.VBox([widgets.HTML(f"<b>{title}</b>"),
                                    widgets.HBox([_with_number_box(c) for c in controls.values()],
                                                 layout=widgets.Layout(flex_flow="row wrap")),
                                    self.summary, self.output])
        self.widget.add_class("ipu-explorer")
        for control in controls.values():
            control.observe(self.update, names="value")
        self.update()

    @property
    def values(self) -> dict:
        return {name: control.value for name, control in self.controls.items()}

    def outcome(self, values: dict) -> dict:
        """What the explorer shows for these control values, without drawing: compute's
        result, or a broken rule (poptorch.Error) as its text."""
        try:
            return self.compute(**values)
        except (Error, AssertionError) as error:  # a rule broken (PopTorch asserts some)
            return {"text": f"<span style='color:#c62828'>{error}</span>", "error": error}

    def update(self, change=None) -> None:
        self.result = self.outcome(self.values)
        self.summary.value = self.result["text"]
        self.figure = None
        if "error" not in self.result:
            self.figure = Figure(figsize=self.figsize, dpi=EXPLORER_DPI)
            self.draw(self.result, self.figure)
        # Setting the Output widget's outputs (rather than displaying inside it) keeps the
        # picture in the widget alone, whichever client runs the notebook.
        self.output.outputs = (_png_output(self.figure),) if self.figure is not None else ()

    @property
    def text(self) -> str:
        """The summary as plain text."""
        return plain_text(self.summary.value)

    def static_bundle(self) -> dict[str, str]:
        """The explorer as it stands, without widgets: text/plain (the summary, which nbval
        compares), text/html (title, summary and figure) and image/png (the figure alone)."""
        bundle = {"text/plain": f"{self.title}: {self.text}"}
        png = _png_base64(self.figure) if self.figure is not None else None
        picture = f'<img alt="{html.escape(self.title)}" src="data:image/png;base64,{png}"/>' if png else ""
        bundle["text/html"] = (f'<div class="ipu-explorer-static"><b>{html.escape(self.title)}</b>'
                               f"<div>{self.summary.value}</div>{picture}"
                               f"<p><i>{STATIC_NOTE}</i></p></div>")
        if png:
            bundle["image/png"] = png
        return bundle

    def _ipython_display_(self):
        # Clients choose the richest form they can draw: a kernel-backed front end draws the
        # widget view; everything else falls back to the static bundle beside it.
        display({**self.static_bundle(), **self.widget._repr_mimebundle_(),
                 "text/plain": f"{self.title}: {self.text}"}, raw=True)


def plain_text(summary: str) -> str:
    """An explorer's HTML summary as plain text."""
    return html.unescape(re.sub(r"<[^>]+>", "", summary))


def _png_base64(figure: Figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=EXPLORER_DPI, bbox_inches="tight")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _png_output(figure: Figure) -> dict:
    return {"output_type": "display_data", "metadata": {},
            "data": {"image/png": _png_base64(figure),
                     "text/plain": f"<Figure size {figure.get_figwidth():g}x{figure.get_figheight():g} in>"}}


# The track's share of a slider, in ems: the slider's width is its description's and this, so a
# long description never squeezes the track to nothing (lesson 16's was 0 px wide).
TRACK_EMS = 16


def slider(description: str, value: float, low: float, high: float,
           step: float = 1) -> widgets.IntSlider | widgets.FloatSlider:
    """An integer slider, or a float one when any of its numbers is a float; as wide as its
    description plus a track a pointer can drag."""
    width = round(0.6 * len(description)) + TRACK_EMS  # about 0.6 em per character
    kind = (widgets.FloatSlider if any(isinstance(n, float) for n in (value, low, high, step))
            else widgets.IntSlider)
    return kind(value=value, min=low, max=high, step=step, description=description,
                continuous_update=False, style={"description_width": "initial"},
                layout=widgets.Layout(width=f"{max(width, 26)}em"))


def _with_number_box(control: widgets.Widget) -> widgets.Widget:
    """An integer slider with more values than its track can show gets a number box beside it,
    linked in the page (so it works from the stored state too); other controls stay as they are."""
    if (not isinstance(control, widgets.IntSlider) or
            (control.max - control.min) // control.step + 1 <= MOST_SLIDER_VALUES):
        return control
    box = widgets.BoundedIntText(value=control.value, min=control.min, max=control.max,
                                 step=control.step, layout=widgets.Layout(width="5.5em"))
    box.add_class("ipu-explorer-number")
    widgets.jslink((control, "value"), (box, "value"))
    return widgets.HBox([control, box])


def choice(description: str, options, value=None) -> widgets.Dropdown:
    options = list(options)
    return widgets.Dropdown(options=options, value=options[0] if value is None else value,
                            description=description, style={"description_width": "initial"})
