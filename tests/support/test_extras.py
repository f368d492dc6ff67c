"""extras.py: each use of a simulator extra is noted against the learner's line, only while a
recording runs, and a lesson's unmarked uses are named."""
import pytest

from ipu_tutorials import poptorch
from ipu_tutorials.support import extras


class Served:
    """A class serving one extra of each form, as the facades do."""
    value = extras.served_property("poptorch.PoplarExecutor.plan", lambda self: 42)

    @extras.served_method("poptorch.PoplarExecutor.report")
    def report(self):
        return 42


def test_nothing_is_noted_without_a_recording():
    assert extras._uses is None or isinstance(extras._uses, list)
    with extras.recording_extras() as uses:
        pass
    Served().value  # noqa: B018
    assert uses == []


def test_a_use_is_noted_against_the_line_that_asked():
    with extras.recording_extras() as uses:
        Served().value  # noqa: B018 - the line noted
    [use] = uses
    assert (use.extra, use.file, use.code) == ("poptorch.PoplarExecutor.plan", __file__,
                                               "Served().value  # noqa: B018 - the line noted")


def test_a_served_method_is_noted_when_called():
    with extras.recording_extras() as uses:
        assert Served().report() == 42
    assert "poptorch.PoplarExecutor.report" in [u.extra for u in uses]


def test_recordings_nest_and_the_outer_one_sees_the_inner_uses():
    with extras.recording_extras() as outer:
        poptorch.OutOfMemoryError  # noqa: B018
        with extras.recording_extras() as inner:
            poptorch.register_custom_op  # noqa: B018
    assert [u.extra for u in inner] == ["poptorch.register_custom_op"]
    assert [u.extra for u in outer] == ["poptorch.OutOfMemoryError", "poptorch.register_custom_op"]


def test_an_undeclared_name_is_refused_while_recording():
    with extras.recording_extras():
        with pytest.raises(KeyError, match=r"poptorch.nope is not declared"):
            extras.record("poptorch.nope")


def test_a_module_serves_its_extras_and_refuses_other_names():
    assert "OutOfMemoryError" in dir(poptorch) and "blocks" not in dir(poptorch)
    with pytest.raises(AttributeError, match=r"module 'poptorch' has no attribute 'blocks'"):
        poptorch.blocks  # noqa: B018 - PopTorch has no such module


@pytest.mark.parametrize("cell, lines, unmarked", [
    ("plan = model.plan  # simulator extra\n", [1], []),
    ("plan = model.plan\n", [1], [(1, "plan = model.plan")]),
    ("x = f(1,\n      model.plan)  # simulator extras: plan\n", [2], []),
    ("x = f(1,  # simulator extra\n      model.plan)\n", [2], []),
    ("for m in model.plan.memory:  # simulator extra\n    print(m.total)\n", [1], []),
    ("for m in range(2):  # simulator extra\n    print(model.plan)\n", [2],
     [(2, "print(model.plan)")]),  # the loop's marker does not cover its body
    ("%timeit model.plan\n", [1], [(1, "%timeit model.plan")]),  # no Python: the line alone
    ("x = 1\n", [5], []),  # a line the cell does not have
])
def test_unmarked_lines_names_each_use_whose_statement_lacks_the_marker(cell, lines, unmarked):
    assert extras.unmarked_lines(cell, lines) == unmarked


def test_a_notebook_kernel_logs_its_uses_and_they_map_to_their_cells(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    log = tmp_path / "uses.jsonl"
    monkeypatch.setenv(extras.LOG_VARIABLE, str(log))  # the kernel inherits it
    cells = ["from ipu_tutorials import poptorch",
             "error = poptorch.OutOfMemoryError\nother = poptorch.Error",
             "def catch():\n    return poptorch.OutOfMemoryError  # simulator extra",
             "catch()"]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3").execute()
    uses = extras.read_log(log)
    by_cell = extras.uses_by_cell(uses, cells)
    assert {i: [(u.extra, u.line) for u in found] for i, found in by_cell.items()} == {
        1: [("poptorch.OutOfMemoryError", 1)], 2: [("poptorch.OutOfMemoryError", 2)]}
    assert extras.unmarked_lines(cells[1], [u.line for u in by_cell[1]]) == [
        (1, "error = poptorch.OutOfMemoryError")]
    assert extras.unmarked_lines(cells[2], [u.line for u in by_cell[2]]) == []
