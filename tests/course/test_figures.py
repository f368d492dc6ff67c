"""A lesson's figures: each has its alt text and its copy in static/, and a page without a kernel
shows explorers as their stored pictures, diagrams inline and each figure with its alt text."""
import html
import os
import re

import nbformat
import pytest

from ipu_tutorials.course import figures as lesson_figures
from ipu_tutorials.course import notebook_form

from .stored import CHECKOUT, LESSONS, notebook


@pytest.mark.parametrize("lesson", LESSONS)
def test_static_holds_each_figure_of_the_notebook(lesson):
    """One static/<lesson>_<n>.png per figure output (an explorer's picture counts once)."""
    name = os.path.splitext(lesson)[0]
    count = sum("image/png" in o.get("data", {}) for c in notebook(lesson).cells
                for o in c.get("outputs", []))
    figures = sorted(f for f in os.listdir(CHECKOUT.static) if re.fullmatch(
        rf"{name}_\d+\.png", f))
    assert count and figures == sorted(f"{name}_{index}.png" for index in range(count))


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_explorer_output_carries_its_static_picture(lesson):
    nb = notebook(lesson)
    explorers = [o for c in nb.cells for o in c.get("outputs", [])
                 if notebook_form.WIDGET_VIEW in o.get("data", {})]
    assert explorers
    for output in explorers:
        png = output["data"]["image/png"]
        assert f"data:image/png;base64,{png}" in output["data"]["text/html"]
    static = lesson_figures.static_explorers(nb)
    assert "widgets" not in static.metadata
    assert not any(notebook_form.WIDGET_VIEW in o.get("data", {})
                   for c in static.cells for o in c.get("outputs", []))


def test_an_explorer_output_splits_into_its_summary_then_its_figure():
    data = {notebook_form.WIDGET_VIEW: {"model_id": "m"}, "text/plain": "Explorer: 3 items",
            "text/html": "<b>...</b>", "image/png": "iVBOR"}
    split = lesson_figures.split_explorer_outputs([nbformat.v4.new_output("display_data", data)])
    assert [dict(o["data"]) for o in split] == [{"text/plain": "Explorer: 3 items"},
                                               {"image/png": "iVBOR"}]


def test_alt_markers_give_each_figure_its_text_in_order():
    source = ("x = 1\n# alt: Two bars: the first\n#   taller than the second.\nplot(x)\n"
              "# a comment that is not alt text\n# alt: A line rising.\nplot(2 * x)\n")
    assert lesson_figures.alt_texts(source) == [
        "Two bars: the first taller than the second.", "A line rising."]
    assert lesson_figures.without_alt_markers(source) == (
        "x = 1\nplot(x)\n# a comment that is not alt text\nplot(2 * x)")


def figure_cell(source: str, figures: int) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    cell.outputs = [nbformat.v4.new_output("display_data", {"image/png": "iVBORw0KGgo=",
                                                            "text/plain": "<Figure>"})
                    for _ in range(figures)]
    return cell


def test_each_figure_carries_its_alt_text_and_the_html_page_shows_it():
    nb = nbformat.v4.new_notebook(cells=[figure_cell("# alt: A line rising.\nplot()", 1)])
    described = lesson_figures.describe_figures(nb, "lesson")
    assert described.cells[0].outputs[0].metadata == {"image/png": {"alt": "A line rising."}}
    page = lesson_figures.figures_with_alt(described).cells[0]
    assert page.outputs[0].data["text/html"].startswith(
        '<img alt="A line rising." src="data:image/png;base64,iVBORw0KGgo=')
    assert page.source == "plot()"  # the page says it as the image's alt, not in the code


def test_a_figure_without_alt_text_stops_the_build():
    nb = nbformat.v4.new_notebook(cells=[figure_cell("# alt: Only one.\nplot(); plot()", 2)])
    with pytest.raises(ValueError, match=r"lesson: cell 0 shows 2 figure\(s\) but has 1 "
                                         r"`# alt:` marker\(s\)"):
        lesson_figures.describe_figures(nb, "lesson")


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_figure_of_every_lesson_has_alt_text(lesson):
    # was wrong: 16 plots showed nbconvert's "No description has been provided for this image"
    for cell in notebook(lesson).cells:
        figures = [o for o in cell.get("outputs", []) if "image/png" in o.get("data", {})]
        texts = [o.metadata["image/png"]["alt"] for o in figures]
        assert texts == lesson_figures.alt_texts(cell.source) and all(texts)


def test_a_page_shows_an_explorers_picture_with_its_figures_alt_text():
    """The stored output stays as the kernel drew it (nbval compares it); a page says the alt."""
    cell = figure_cell("# alt: Bars per IPU.\nexplorer()", 1)
    cell.outputs[0].data["text/html"] = ('<div class="ipu-explorer-static"><b>Planner</b>'
                                         '<img alt="Planner" src="data:image/png;base64,x"/></div>')
    nb = lesson_figures.describe_figures(nbformat.v4.new_notebook(cells=[cell]), "lesson")
    assert 'alt="Planner"' in nb.cells[0].outputs[0].data["text/html"]
    page = lesson_figures.figures_with_alt(nb).cells[0].outputs[0].data["text/html"]
    assert f'<img alt="{html.escape("Bars per IPU.")}"' in page

