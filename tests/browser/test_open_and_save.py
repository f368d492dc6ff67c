"""Opening a stored lesson in JupyterLab and saving it without running anything (Ctrl-S, or
autosave) rewrites nothing: build_notebooks.py stores what JupyterLab writes back."""
from __future__ import annotations

import json
import platform

import pytest

from tests.browser.conftest import LESSONS
from tests.browser.pages import (expected_outputs, lab_command, open_in_lab,
                                 wait_for_kernel_idle)
from tests.browser.test_lessons import assert_saved_unchanged, lesson_page  # noqa: F401

DIRTY = "() => window.jupyterapp.shell.currentWidget.context.model.dirty"


def built_under_this_python(notebook: bytes) -> bool:
    """The kernel's reply rewrites language_info.version when the lesson was built under
    another Python: the one edit JupyterLab makes on opening (docs/developing.md)."""
    return json.loads(notebook)["metadata"]["language_info"]["version"] == \
        platform.python_version()


@pytest.mark.parametrize("lesson", LESSONS)
def test_opening_and_saving_rewrites_nothing(lesson, lab, lesson_page):
    base, served = lab
    path = served / "notebooks" / f"{lesson}.ipynb"
    original = path.read_bytes()
    open_in_lab(lesson_page, base, lesson, expected_outputs(path)["outputs"])
    wait_for_kernel_idle(lesson_page)  # the kernel's info reply is where metadata would change
    lesson_page.wait_for_timeout(2000)
    # nothing for autosave to write: the model matches the file once the kernel is up
    assert lesson_page.evaluate(DIRTY) is not built_under_this_python(original)
    lab_command(lesson_page, "docmanager:save")
    assert_saved_unchanged(path.read_bytes(), original)  # byte for byte, or only the version
