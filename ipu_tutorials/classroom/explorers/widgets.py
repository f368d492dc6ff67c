"""The explorer widget: controls, a summary computed by the simulator, and a figure."""
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


class Explorer:
    """Recomputes `compute(**control values)` on every change, then shows its text and figure.

    compute returns a dict with at least "text" (HTML); draw(result, figure) draws into a
    matplotlib Figure. Figures are not registered with pyplot, so only the widget shows them.
    A broken rule (poptorch.Error) is shown as the explorer's text, not raised.
    """

    def __init__(self, title: str, controls: dict[str, widgets.Widget],
                 compute: Callable[..., dict], draw: Callable[[dict, Figure], None],
                 figsize: tuple[float, float] = (10, 3.5)):
        self.title, self.controls = title, controls
        self.compute, self.draw, self.figsize = compute, draw, figsize
        self.summary = widgets.HTML()
        self.output = widgets.Output()
        self.result: dict = {}
        self.figure: Figure | None = None
        self.widget = widgets.VBox([widgets.HTML(f"<b>{title}</b>"),
                                    widgets.HBox(list(controls.values()),
                                                 layout=widgets.Layout(flex_flow="row wrap")),
                                    self.summary, self.output])
        for control in controls.values():
            control.observe(self.update, names="value")
        self.update()

    @property
    def values(self) -> dict:
        return {name: control.value for name, control in self.controls.items()}

    def update(self, change=None) -> None:
        try:
            self.result = self.compute(**self.values)
        except Error as error:  # e.g. too little gradient accumulation for the pipeline
            self.result = {"text": f"<span style='color:#c62828'>{error}</span>", "error": error}
        self.summary.value = self.result["text"]
        self.figure = None
        if "error" not in self.result:
            self.figure = Figure(figsize=self.figsize)
            self.draw(self.result, self.figure)
        # Setting the Output widget's outputs (rather than displaying inside it) keeps the
        # picture in the widget alone, whichever client runs the notebook.
        self.output.outputs = (_png_output(self.figure),) if self.figure is not None else ()

    @property
    def text(self) -> str:
        """The summary as plain text."""
        return html.unescape(re.sub(r"<[^>]+>", "", self.summary.value))

    def _ipython_display_(self):
        # The plain-text form is the summary (not the widget tree with its images), so saved
        # notebooks and nbval see the simulator's numbers.
        bundle = self.widget._repr_mimebundle_()
        bundle["text/plain"] = f"{self.title}: {self.text}"
        display(bundle, raw=True)


def _png_output(figure: Figure) -> dict:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=80, bbox_inches="tight")
    return {"output_type": "display_data", "metadata": {},
            "data": {"image/png": base64.b64encode(buffer.getvalue()).decode("ascii"),
                     "text/plain": f"<Figure size {figure.get_figwidth():g}x{figure.get_figheight():g} in>"}}


def slider(description: str, value: int, low: int, high: int, step: int = 1) -> widgets.IntSlider:
    return widgets.IntSlider(value=value, min=low, max=high, step=step, description=description,
                             continuous_update=False, style={"description_width": "initial"})


def choice(description: str, options, value=None) -> widgets.Dropdown:
    options = list(options)
    return widgets.Dropdown(options=options, value=options[0] if value is None else value,
                            description=description, style={"description_width": "initial"})
