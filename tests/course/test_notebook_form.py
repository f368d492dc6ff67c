"""The lessons are stored as JupyterLab saves them and deterministic in what nbval checks: no
carriage-return frames, prints joined, whole floats as integers, stable widget ids, no
addresses or wall-clock times."""
import copy
import json
import re
import uuid

import nbformat
import pytest

from ipu_tutorials.course import notebook_form

from .stored import LESSONS, notebook

ADDRESS = re.compile(r"0x[0-9a-f]{6,}")
WALL_CLOCK = re.compile(r"\d+(\.\d+)?\s*(s|it)/(it|s)\b|\[\d\d:\d\d<")


def checked_text(nb):
    """Every text output nbval compares."""
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                yield output["text"]
            for key, value in output.get("data", {}).items():
                if key == "text/plain":
                    yield value


@pytest.mark.parametrize("lesson", LESSONS)
def test_checked_outputs_hold_no_addresses_or_wall_clock_times(lesson):
    for text in checked_text(notebook(lesson)):
        assert not ADDRESS.search(text), text
        assert not WALL_CLOCK.search(text), text


def test_prints_split_across_messages_are_joined():
    outputs = [nbformat.v4.new_output("stream", name="stdout", text="a\n"),
               nbformat.v4.new_output("stream", name="stdout", text="b\n"),
               nbformat.v4.new_output("stream", name="stderr", text="c\n"),
               nbformat.v4.new_output("stream", name="stdout", text="d\n")]
    joined = notebook_form.coalesce_streams(outputs)
    assert [(o["name"], o["text"]) for o in joined] == [("stdout", "a\nb\n"), ("stderr", "c\n"),
                                                         ("stdout", "d\n")]


@pytest.mark.parametrize("lesson", LESSONS)
def test_notebooks_are_stored_as_jupyterlab_saves_them(lesson):
    """No carriage-return frames, the installed kernel's display name, JavaScript numbers in
    the widget state: a save in JupyterLab rewrites nothing (tests/browser checks it live)."""
    nb = notebook(lesson)
    assert nb.metadata["kernelspec"] == notebook_form.kernelspec()
    notebook_form.check_savable(nb)
    assert notebook_form.as_javascript_numbers(copy.deepcopy(nb)) == nb


def test_carriage_returns_in_a_stream_are_refused():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print()")])
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", name="stderr", text="a 0%\ra 100%\n")]
    with pytest.raises(ValueError, match="carriage returns .* JupyterLab would rewrite them"):
        notebook_form.check_savable(nb)


def test_whole_floats_become_integers_as_in_javascript():
    assert (notebook_form.as_javascript_numbers({"a": [2.0, 0.25, "2.0", True], "b": 0.0}) ==
            {"a": [2, 0.25, "2.0", True], "b": 0})
    assert type(notebook_form.as_javascript_numbers({"b": 0.0})["b"]) is int


def test_widget_model_ids_are_stable_from_build_to_build():
    stored = notebook(LESSONS[0])
    state = stored.metadata["widgets"][notebook_form.WIDGET_STATE]["state"]
    builds = [notebook_form.stable_widget_ids(with_random_widget_ids(stored, state), "lesson")
              for _ in range(2)]  # two builds: each kernel draws its own random ids
    assert builds[0] == builds[1]
    fresh = builds[0].metadata["widgets"][notebook_form.WIDGET_STATE]["state"]
    assert len(fresh) == len(state) and not set(fresh) & set(state)
    text = json.dumps(builds[0])
    views = re.findall(r'"model_id": "(\w+)"', text)
    assert views and set(views + re.findall(r"IPY_MODEL_(\w+)", text)) <= set(fresh)


def with_random_widget_ids(nb, state):
    text = json.dumps(nb)
    for model_id in state:
        text = text.replace(model_id, uuid.uuid4().hex)
    return nbformat.from_dict(json.loads(text))
