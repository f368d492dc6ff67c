"""Opening a stored lesson in JupyterLab and letting it autosave, untrusted, rewrites nothing:
the loaded notebook is not dirty (so autosave has nothing to write), and a save (what autosave
does when it has) gives back the stored bytes."""
from __future__ import annotations

import pytest

from tests.browser.pages import expected_outputs, lab_command, open_in_lab, shut_down_kernel
from tests.browser.test_lessons import assert_saved_unchanged

# a lesson with explorers (widget state and static pictures) and one with figures only
LESSONS = ["09_half_precision", "11_observing_and_profiling"]


@pytest.mark.parametrize("lesson", LESSONS)
def test_opening_and_autosaving_changes_nothing(lesson, lab, page):
    base, served = lab
    path = served / "notebooks" / f"{lesson}.ipynb"
    original = path.read_bytes()
    open_in_lab(page, base, lesson, expected_outputs(path)["outputs"])
    page.wait_for_timeout(2000)  # widget managers and renderers settle
    dirty = page.evaluate("() => window.jupyterapp.shell.currentWidget.context.model.dirty")
    assert dirty is False, "JupyterLab changed the notebook by opening it: autosave would write"
    lab_command(page, "docmanager:save")
    shut_down_kernel(page)
    assert_saved_unchanged(path.read_bytes(), original)
