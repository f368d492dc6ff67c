"""Every lesson in JupyterLab, as a learner right after cloning and as an instructor checking
the solutions: figures and explorer pictures show before anything runs, opening, trusting and
saving rewrite nothing, and the instructor edition, run top to bottom, passes every check with
its reference solutions while each explorer reacts to its controls with the simulator's own
numbers.

One run of each lesson serves both: the learner's notebook is run by nbval (its stored outputs,
"Not yet" under every check, are compared cell by cell), so the browser runs the instructor
edition, which is the learner's notebook with the solutions added (tests/course/test_editions.py
runs it in a plain kernel where there is no browser)."""
from __future__ import annotations

import json
import platform

import nbformat
import pytest

from ipu_tutorials.classroom.exercises.base import is_verdict
from ipu_tutorials.classroom.explorers.widgets import STATIC_NOTE
from ipu_tutorials.course import editions
from tests.browser.conftest import LESSONS
from tests.browser.pages import (LiveExplorer, assert_shows_summary, check_explorer_reacts,
                                 expected_outputs, lab_command, loaded_images, open_in_lab,
                                 run_all_cells, shut_down_kernel, wait_for_kernel_idle)

ERROR = "Error displaying widget"


def assert_pictures_show(page, expected: dict) -> None:
    """Untrusted, with no kernel run: stored figures and explorer pictures are drawn."""
    figures = loaded_images(page, ".jp-OutputArea-output.jp-RenderedImage img")
    assert len(figures) == expected["figures"]
    assert all(f["natural_width"] > 0 and f["visible"] for f in figures), figures
    statics = page.locator(".ipu-explorer-static")
    assert statics.count() == len(expected["explorers"])
    pictures = loaded_images(page, ".ipu-explorer-static img")
    assert len(pictures) == len(expected["explorers"])
    assert all(p["natural_width"] > 0 and p["visible"] and p["box"]["height"] > 100
               for p in pictures), pictures
    for index, summary in enumerate(expected["explorers"]):  # "Title: summary"
        assert_shows_summary(statics.nth(index), summary)
        assert STATIC_NOTE in statics.nth(index).inner_text()


def assert_no_check_says_correct(page, expected: dict) -> None:
    """The learner's notebook: each check says "Not yet" until the learner answers."""
    text = page.locator(".jp-NotebookPanel").inner_text()
    assert "Correct!" not in text
    assert text.count("Not yet:") == expected["exercises"]


def built_under_this_python(notebook: bytes) -> bool:
    """The kernel's reply rewrites language_info.version when the lesson was built under
    another Python: the one edit JupyterLab makes on opening (docs/developing.md)."""
    return (json.loads(notebook)["metadata"]["language_info"]["version"] ==
            platform.python_version())


def assert_opening_and_saving_rewrites_nothing(page, path, original: bytes) -> None:
    """Untrusted, the kernel up: nothing for autosave to write (the model matches the file once
    the kernel's info reply is in), and Ctrl-S writes the file back byte for byte."""
    wait_for_kernel_idle(page)
    page.wait_for_timeout(2000)
    dirty = page.evaluate("() => window.jupyterapp.shell.currentWidget.context.model.dirty")
    assert dirty is not built_under_this_python(original)
    lab_command(page, "docmanager:save")
    assert_saved_unchanged(path.read_bytes(), original)


def assert_every_check_says_correct(page, nb: nbformat.NotebookNode) -> None:
    """The instructor edition, run: each exercise's solution passes its own check (a check
    that trains prints its compilation bar above the verdict)."""
    graded = editions.exercises_of(nb)
    assert graded, "a lesson without exercises"
    cells = page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell")
    for g in graded:
        shown = cells.nth(g.check_cell).locator(".jp-OutputArea-output").all_inner_texts()
        verdicts = [text.strip() for text in shown if is_verdict(text.strip())]
        assert len(verdicts) == 1 and verdicts[0].startswith("Correct! "), (g.name, shown)


def trust_and_save(page) -> None:
    # The command waits for the learner's answer to its dialog, so it is started, not awaited.
    page.evaluate("() => { window.__trusted = window.jupyterapp.commands.execute('notebook:trust'); }")
    page.locator(".jp-Dialog .jp-mod-accept").click()
    page.evaluate("() => window.__trusted")
    lab_command(page, "docmanager:save")


def assert_saved_unchanged(saved: bytes, original: bytes) -> None:
    """Byte for byte the same, except that JupyterLab records the running kernel's Python
    version, which differs when the lessons were built under another Python."""
    if saved == original:
        return
    stored, now = json.loads(original), json.loads(saved)
    version = platform.python_version()
    assert stored["metadata"]["language_info"]["version"] != version, (
        "saving in JupyterLab rewrote the notebook")
    stored["metadata"]["language_info"]["version"] = version
    assert now == stored, "saving in JupyterLab rewrote more than the Python version"


def assert_widgets_drawn_from_stored_state(page, explorers: int) -> None:
    """Trusted, before the kernel runs: widgets drawn from the stored state, figures loaded."""
    page.wait_for_function("n => document.querySelectorAll('.ipu-explorer').length === n",
                           arg=explorers)
    pictures = loaded_images(page, ".ipu-explorer .ipu-explorer-figure img")
    assert len(pictures) == explorers
    assert all(p["natural_width"] > 0 and p["visible"] for p in pictures), pictures
    assert ERROR not in page.inner_text("body")


def refused_requests(page) -> list[str]:
    """Each request the server answers with an error from now on (a figure or file the lesson
    names that is not under the root the README serves, notebooks/)."""
    refused: list[str] = []
    page.on("response", lambda r: refused.append(f"{r.status} {r.url.split('?')[0]}")
            if r.status >= 400 else None)
    return refused


def assert_text_resolves(page, notebook: nbformat.NotebookNode) -> None:
    """Every figure of the lesson's text shows (each travels in its cell as an attachment),
    and every link to a file the server serves (a sibling lesson, a file under notebooks/)
    answers; links elsewhere on the web are not followed (offline)."""
    attached = sum(len(c.get("attachments", {})) for c in notebook.cells
                   if c.cell_type == "markdown")
    diagrams = loaded_images(page, ".jp-RenderedMarkdown img")
    assert len(diagrams) == attached
    assert all(d["natural_width"] > 0 and d["visible"] for d in diagrams), diagrams
    hrefs = page.eval_on_selector_all(".jp-RenderedMarkdown a[href]", "as => as.map(a => a.href)")
    served = [href for href in hrefs if href.startswith(page.url.split("/lab/")[0])
              and "/files/" in href]
    statuses = page.evaluate("hrefs => Promise.all(hrefs.map(h => fetch(h).then(r => r.status)))",
                             served)
    assert [h for h, status in zip(served, statuses) if status != 200] == []


def assert_every_control_is_usable(page, explorer: LiveExplorer) -> None:
    """Each slider has a track to drag and a drag to its middle lands between its ends; each
    dropdown and checkbox is visible at a size a pointer can use."""
    sliders = explorer.root.locator(".widget-slider")
    for index in range(sliders.count()):
        slider = sliders.nth(index)
        track, handle = slider.locator(".noUi-target"), slider.locator(".noUi-handle")
        box, grip = track.bounding_box(), handle.bounding_box()
        assert box and box["width"] >= 100, (explorer.title, index, box)
        page.mouse.move(grip["x"] + grip["width"] / 2, grip["y"] + grip["height"] / 2)
        page.mouse.down()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2, steps=8)
        page.mouse.up()
        low, high, value = slider.evaluate(
            "s => { const t = s.querySelector('.noUi-target').noUiSlider;"
            "       const r = t.options.range; return [r.min, r.max, Number(t.get())]; }")
        assert low < value < high, (explorer.title, index, low, value, high)
    for selector in (".widget-dropdown select", ".widget-checkbox input"):
        for box in [c.bounding_box() for c in explorer.root.locator(selector).all()]:
            assert box and box["width"] >= 12 and box["height"] >= 12, (explorer.title, selector)


@pytest.fixture
def lesson_page(page):
    """The page; the lesson's kernel is shut down afterwards, so lessons do not add up."""
    yield page
    shut_down_kernel(page)


@pytest.mark.parametrize("lesson", LESSONS)
def test_lesson_in_jupyterlab(lesson, lab, lesson_page, tmp_path):
    base, served = lab
    page = lesson_page
    path = served / f"{lesson}.ipynb"
    original = path.read_bytes()
    expected = expected_outputs(path)

    # The learner's notebook, as cloned, served as the README serves it.
    refused = refused_requests(page)
    open_in_lab(page, base, lesson, expected["outputs"])
    assert_pictures_show(page, expected)
    assert_text_resolves(page, nbformat.read(path, as_version=4))
    assert refused == []
    assert_no_check_says_correct(page, expected)
    assert ERROR not in page.inner_text("body")
    page.locator(".ipu-explorer-static").first.screenshot(path=str(tmp_path / "untrusted.png"))
    assert_opening_and_saving_rewrites_nothing(page, path, original)

    trust_and_save(page)
    assert_widgets_drawn_from_stored_state(page, len(expected["explorers"]))
    page.locator(".ipu-explorer").first.screenshot(path=str(tmp_path / "trusted.png"))
    assert_saved_unchanged(path.read_bytes(), original)
    shut_down_kernel(page)

    # The instructor edition, run top to bottom as nbgrader's autograder runs it.
    instructor = served / "instructor" / f"{lesson}.ipynb"
    open_in_lab(page, base, lesson, expected_outputs(instructor)["outputs"], folder="instructor")
    run_all_cells(page)
    # stderr only where the stored lesson has it: ipu_print_tensor writes there, as PopTorch does
    assert page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
                        ).count() == expected["stderr"]
    assert ERROR not in page.inner_text("body")
    assert_every_check_says_correct(page, nbformat.read(instructor, as_version=4))
    live = page.locator(".jp-NotebookPanel .ipu-explorer")
    assert live.count() == len(expected["explorers"])
    assert page.locator(".ipu-explorer-static").count() == 0  # the live widgets replaced them
    for index in range(live.count()):
        explorer = LiveExplorer(live.nth(index))
        explorer.root.scroll_into_view_if_needed()
        check_explorer_reacts(explorer)
        assert_every_control_is_usable(page, explorer)
        explorer.root.screenshot(path=str(tmp_path / f"live-{index}.png"))
