"""The explorer's stored output: the widget view with a static picture beside it."""
import base64

import matplotlib

from ipu_tutorials.classroom import pipeline_explorer
from ipu_tutorials.classroom.explorers.widgets import Explorer, choice, plain_text

matplotlib.use("Agg")
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def displayed(explorer, monkeypatch) -> dict:
    shown = []
    monkeypatch.setattr("ipu_tutorials.classroom.explorers.widgets.display",
                        lambda bundle, raw: shown.append(bundle))
    explorer._ipython_display_()
    assert len(shown) == 1
    return shown[0]


def test_stored_output_has_the_widget_and_a_static_picture_of_it(monkeypatch):
    explorer = pipeline_explorer(ipus=4, accumulation=8)
    bundle = displayed(explorer, monkeypatch)
    assert bundle[WIDGET_VIEW]["model_id"] == explorer.widget.model_id
    assert bundle["text/plain"] == f"Pipeline explorer: {explorer.text}"
    png = bundle["image/png"]
    assert base64.b64decode(png).startswith(PNG_SIGNATURE)
    # the picture is the figure the widget shows, and the HTML carries summary and figure
    assert png == explorer.output.outputs[0]["data"]["image/png"]
    assert explorer.summary.value in bundle["text/html"]
    assert f'src="data:image/png;base64,{png}"' in bundle["text/html"]
    assert 'class="ipu-explorer-static"' in bundle["text/html"]


def test_static_picture_follows_the_controls():
    explorer = pipeline_explorer(ipus=4, accumulation=8)
    before = explorer.static_bundle()
    explorer.controls["accumulation"].value = 32
    after = explorer.static_bundle()
    assert after["image/png"] != before["image/png"]
    assert after["text/plain"] != before["text/plain"]
    assert after["text/plain"] == f"Pipeline explorer: {explorer.text}"


def test_a_broken_rule_is_shown_as_text_without_a_picture():
    explorer = pipeline_explorer(ipus=8, accumulation=4)
    bundle = explorer.static_bundle()
    assert "image/png" not in bundle and "<img" not in bundle["text/html"]
    assert "accumulation" in bundle["text/plain"]


def test_the_outcome_of_some_values_is_what_the_widget_shows_for_them():
    explorer = pipeline_explorer(ipus=4, accumulation=8)
    for accumulation in (32, 4):  # a pipeline, then too few micro-batches for it: an error
        predicted = explorer.outcome({**explorer.values, "accumulation": accumulation})
        explorer.controls["accumulation"].value = accumulation
        assert plain_text(predicted["text"]) == explorer.text
        assert ("error" in predicted) is (explorer.figure is None)


def test_every_explorer_inherits_the_picture_and_the_classes(monkeypatch):
    def compute(n):
        return {"text": f"<b>{n}</b> items"}

    def draw(result, figure):
        figure.subplots().plot([0, 1])

    explorer = Explorer("Tiny explorer", {"n": choice("n", [1, 2])}, compute, draw)
    bundle = displayed(explorer, monkeypatch)
    assert bundle["text/plain"] == "Tiny explorer: 1 items"
    assert {WIDGET_VIEW, "text/html", "image/png"} <= set(bundle)
    assert "ipu-explorer" in explorer.widget._dom_classes
    assert "ipu-explorer-summary" in explorer.summary._dom_classes
    assert "ipu-explorer-figure" in explorer.output._dom_classes


def test_a_slider_with_more_values_than_its_track_shows_gets_a_number_box():
    # was wrong: gradient accumulation 1-64 on a 57-pixel track, a value per pixel
    import ipywidgets as widgets

    explorer = pipeline_explorer(ipus=4, accumulation=8)
    paired = [c for c in explorer.widget.children[1].children if isinstance(c, widgets.HBox)]
    assert len(paired) == 1  # device iterations (1-4) fits its track
    slider, box = paired[0].children
    assert slider is explorer.controls["accumulation"]
    assert isinstance(box, widgets.BoundedIntText) and (box.min, box.max, box.value) == (1, 64, 8)


def test_the_stored_picture_says_that_running_the_cell_brings_the_controls():
    bundle = pipeline_explorer().static_bundle()
    assert "run this cell to bring its controls" in bundle["text/html"]
    assert "run this cell" not in bundle["text/plain"]  # nbval compares the summary alone


def test_an_error_names_the_lessons_blocks():
    # was wrong: Stage("S0") .. Stage("S3"), names the lesson never shows
    explorer = pipeline_explorer(ipus=4, accumulation=6)
    assert 'Stage("B1"), Stage("B2"), Stage("B3"), Stage("B4")' in explorer.text
