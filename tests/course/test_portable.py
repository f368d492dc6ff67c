"""A lesson's figures travel with its notebook and its links work outside the checkout: what
`jupyter lab notebooks/` serves (the README's way in), a downloaded notebook, Colab, GitHub."""
import base64
import os
import re

import nbformat
import pytest
from markdown_it import MarkdownIt
from nbconvert import HTMLExporter

from ipu_tutorials.course import portable
from ipu_tutorials.course.checkout import Checkout, CourseError
from ipu_tutorials.course.lessons import repository

from .stored import CHECKOUT, LESSONS, notebook

REPOSITORY = repository(CHECKOUT)


def markdown_cell(source: str) -> nbformat.NotebookNode:
    return portable.travelling(nbformat.v4.new_markdown_cell(source), CHECKOUT, REPOSITORY)


def test_a_figure_from_static_travels_as_an_attachment():
    cell = markdown_cell("Before ![The staircase](../static/diagram_pipeline.png) after.")
    assert cell.source == "Before ![The staircase](attachment:diagram_pipeline.png) after."
    with open(os.path.join(CHECKOUT.static, "diagram_pipeline.png"), "rb") as f:
        assert base64.b64decode(cell.attachments["diagram_pipeline.png"]["image/png"]) == f.read()


def test_a_link_outside_notebooks_names_the_repository_s_file_and_keeps_its_anchor():
    cell = markdown_cell("See [the bubble](../docs/coming-from-gpus.md#pipeline-parallelism) "
                         "and [lesson 4](04_pipelining.ipynb).")
    assert cell.source == (f"See [the bubble]({REPOSITORY}/blob/main/docs/coming-from-gpus.md"
                           f"#pipeline-parallelism) and [lesson 4](04_pipelining.ipynb).")
    assert "attachments" not in cell


def test_a_missing_figure_is_one_line_naming_it(tmp_path):
    checkout = Checkout(str(tmp_path))
    with pytest.raises(CourseError, match=r"the figure static/nowhere.png is not in .*ipu-course diagrams"):
        portable.travelling(nbformat.v4.new_markdown_cell("![x](../static/nowhere.png)"),
                            checkout, REPOSITORY)


def test_the_html_export_shows_an_attached_figure_inline():
    nb = nbformat.v4.new_notebook()
    nb.cells = [markdown_cell("![The staircase](../static/diagram_pipeline.png)")]
    body, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    assert re.search(r'<img alt="The staircase" src="data:image/png;base64,iVBORw0KGgo', body)


def targets(source: str) -> list[str]:
    """Every link and image target of a Markdown text, as CommonMark (JupyterLab) reads it."""
    found = []

    def walk(tokens):
        for token in tokens:
            if token.type in ("link_open", "image"):
                found.append(token.attrGet("href") or token.attrGet("src"))
            walk(token.children or [])
    walk(MarkdownIt("commonmark").parse(source))
    return found


def github_anchor(heading: str) -> str:
    """The anchor GitHub (and the site's toc) gives a Markdown heading."""
    text = re.sub(r"[`*_]|<[^>]+>", "", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def resolves(target: str, cell: nbformat.NotebookNode) -> bool:
    """Whether a target works from notebooks/ with nothing else of the checkout served."""
    if target.startswith("attachment:"):
        return target.split(":", 1)[1] in cell.get("attachments", {})
    if target.startswith(f"{REPOSITORY}/blob/main/"):
        path, _, anchor = target[len(f"{REPOSITORY}/blob/main/"):].partition("#")
        file = os.path.join(CHECKOUT.root, path)
        if not os.path.isfile(file):
            return False
        with open(file, encoding="utf-8") as f:
            headings = re.findall(r"^#{1,6} (.+)$", f.read(), re.M)
        return not anchor or anchor in {github_anchor(h) for h in headings}
    if re.match(r"[a-z]+://", target):
        return True  # elsewhere on the web: not checked offline
    path = target.partition("#")[0]
    return ".." not in path.split("/") and os.path.isfile(os.path.join(CHECKOUT.notebooks, path))


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_link_and_figure_of_a_stored_lesson_works_from_notebooks(lesson):
    broken = [(index, target) for index, cell in enumerate(notebook(lesson).cells)
              if cell.cell_type == "markdown"
              for target in targets(cell.source) if not resolves(target, cell)]
    assert broken == [], f"{lesson}: links and figures that do not resolve from notebooks/"
