"""A learner at an exercise in JupyterLab, with the lesson opened as the README says
(`jupyter lab notebooks/`): no check says "Correct!" before an answer is written, the answer
cell then the check gives it; an explorer's number box reaches any value, and its error names
the lesson's own blocks."""
from __future__ import annotations

import nbformat
import pytest

from ipu_tutorials.course import editions
from tests.browser.pages import (LiveExplorer, expected_outputs, open_in_lab, shut_down_kernel,
                                 wait_for_kernel_idle)

RUN_SECONDS = 300


@pytest.fixture
def lesson_page(page):
    yield page
    shut_down_kernel(page)


def cell(page, index: int):
    return page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell").nth(index)


def run_cell(page, index: int) -> None:
    """Click into the cell and press Shift+Enter, as a learner runs it; wait until it has run."""
    wait_for_kernel_idle(page)  # started, if JupyterLab did not start it
    cell(page, index).locator(".jp-InputArea").click()
    page.keyboard.press("Shift+Enter")
    page.wait_for_function(
        """i => { const c = window.jupyterapp.shell.currentWidget.content.model.cells.get(i);
                  return c.executionCount !== null && c.executionCount !== undefined; }""",
        arg=index, timeout=RUN_SECONDS * 1000)
    wait_for_kernel_idle(page)


def test_a_lesson_says_correct_only_once_the_learner_has_answered(lab, lesson_page, tmp_path):
    base, served = lab
    page, lesson = lesson_page, "03_blocks_and_stages"
    path = served / f"{lesson}.ipynb"
    nb = nbformat.read(path, as_version=4)
    graded = editions.exercises_of(nb)
    open_in_lab(page, base, lesson, expected_outputs(path)["outputs"])

    # was wrong: notebooks/ held the answered lessons, every check already "Correct!"
    assert "Correct!" not in page.locator(".jp-NotebookPanel").inner_text()
    for g in graded:
        assert cell(page, g.check_cell).locator(".jp-OutputArea").inner_text().startswith(
            "Not yet:")

    first = cell(page, graded[0].answer_cell - 2)  # how the exercises work, the first exercise
    first.scroll_into_view_if_needed()
    page.screenshot(path=str(tmp_path / "first-exercise.png"))

    last = graded[-1]  # "How many IPUs?": the learner writes the answer, runs it, then the check
    imports = next(i for i, c in enumerate(nb.cells) if editions.MODULE.search(c.source))
    run_cell(page, imports)
    editor = cell(page, last.answer_cell).locator(".cm-content")
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.type("my_ipu_count = 8")
    run_cell(page, last.answer_cell)
    run_cell(page, last.check_cell)
    feedback = cell(page, last.check_cell).locator(".jp-OutputArea")
    assert feedback.inner_text().startswith("Correct! 3 IPUs per replica")
    assert feedback.locator("b").first.inner_text() == "Correct!"  # HTML, wrapped between words
    feedback.screenshot(path=str(tmp_path / "correct.png"))
    for g in graded[:-1]:  # the others still wait for their answers
        assert "Correct!" not in cell(page, g.check_cell).inner_text()


def test_the_pipeline_explorer_reaches_any_accumulation_and_names_the_lessons_blocks(
        lab, lesson_page, tmp_path):
    base, served = lab
    page, lesson = lesson_page, "04_pipelining"
    path = served / f"{lesson}.ipynb"
    nb = nbformat.read(path, as_version=4)
    explorer_cell = next(i for i, c in enumerate(nb.cells) if "pipeline_explorer(" in c.source)
    # The stored picture says how to get the controls. It is read from the file: JupyterLab shows
    # it until the kernel's widget manager is up, then may draw the saved widget state instead
    # (a race this test once lost under load).
    stored = "".join(o.get("data", {}).get("text/html", "") for o in nb.cells[explorer_cell].outputs)
    assert 'class="ipu-explorer-static"' in stored
    assert "run this cell to bring its controls" in stored
    open_in_lab(page, base, lesson, expected_outputs(path)["outputs"])
    run_cell(page, explorer_cell)  # the explorer's cell stands alone: its imports are in it
    explorer = LiveExplorer(cell(page, explorer_cell).locator(".ipu-explorer"))
    box = explorer.root.locator(".ipu-explorer-number input")
    assert box.count() == 1  # only the 1-64 accumulation slider needs one

    before = explorer.state()
    box.fill("6")
    box.press("Enter")
    summary, _ = wait_for_summary(explorer, before[0])
    # was wrong: the error named the explorer's hidden Stage("S0") .. Stage("S3")
    assert 'Stage("B1"), Stage("B2"), Stage("B3"), Stage("B4")' in summary
    assert explorer.controls()["gradient accumulation"] == "6"  # the slider follows the box

    before = explorer.state()
    box.fill("7")
    box.press("Enter")
    summary, figure = explorer.wait_for_change(before)  # the summary and the timeline are back
    assert "13 cycles per step (fill 6, main 1, flush 6)" in summary and figure
    explorer.root.screenshot(path=str(tmp_path / "explorer-7.png"))


def wait_for_summary(explorer: LiveExplorer, old: str) -> tuple:
    explorer.root.page.wait_for_function(
        "([el, old]) => el.querySelector('.ipu-explorer-summary').innerText !== old",
        arg=[explorer.root.element_handle(), old], timeout=30_000)
    return explorer.state()
