"""Lesson code written once: `# show:` lines become the package's source, a notebook holding an
older version is named with its first changed line, and a hand copy of the package is refused."""
import os
import textwrap

import pytest

from ipu_tutorials.course import shown_code
from ipu_tutorials.tutorial import models

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = textwrap.dedent('''\
    """Models."""
    import torch


    def helper(x):
        return x


    @torch.no_grad()
    def decorated(x):
        """Doubles x."""
        y = x + x
        z = y * 1
        return z


    class Model(torch.nn.Module):
        def forward(self, x):
            x = x + 1
            x = x * 2
            return x
    ''')


@pytest.fixture
def root(tmp_path):
    """A repository whose package holds one module, ipu_tutorials.models."""
    (tmp_path / "ipu_tutorials").mkdir()
    (tmp_path / "ipu_tutorials" / "models.py").write_text(MODELS)
    return str(tmp_path)


def test_a_definition_is_its_source_as_the_file_has_it_decorators_included(root):
    found = shown_code.definition("ipu_tutorials.models.decorated", root)
    assert found.source == "\n".join(MODELS.splitlines()[8:14])
    assert found.source.startswith("@torch.no_grad()\ndef decorated(x):")
    assert (found.path, found.line) == (os.path.join("ipu_tutorials", "models.py"), 9)


def test_the_package_s_network_is_shown_as_inspect_reads_it():
    import inspect
    found = shown_code.definition("ipu_tutorials.tutorial.models.Network", ROOT)
    assert found.source == inspect.getsource(models.Network).rstrip("\n")


def test_a_marker_becomes_the_source_and_the_rest_of_the_cell_stays(root):
    cell = "import torch\n# show: ipu_tutorials.models.helper\n\n\nprint(helper(1))"
    assert shown_code.expand(cell, root) == (
        "import torch\ndef helper(x):\n    return x\n\n\nprint(helper(1))")
    assert shown_code.shown(cell) == ["ipu_tutorials.models.helper"]
    assert shown_code.expand("#  show: not a marker", root) == "#  show: not a marker"


@pytest.mark.parametrize("name, says", [
    ("ipu_tutorials.models.Missing", "ipu_tutorials.models defines no top-level class or "
                                     "function 'Missing' (it defines: helper, decorated, Model)"),
    ("ipu_tutorials.nowhere.Model", "there is no module ipu_tutorials.nowhere"),
    ("torch.nn.Linear", "a lesson shows the package's code; name it as ipu_tutorials.module.Name"),
    ("Model", "a lesson shows the package's code"),
])
def test_a_marker_that_names_nothing_is_one_line_naming_it(root, name, says):
    with pytest.raises(shown_code.LessonCodeError) as error:
        shown_code.expand(f"# show: {name}", root)
    assert f"`# show: {name}`: " in str(error.value) and says in str(error.value)
    assert "\n" not in str(error.value)


def test_a_cell_built_from_an_older_definition_names_it_and_its_first_changed_line(root):
    names = ["ipu_tutorials.models.helper", "ipu_tutorials.models.Model"]
    built = shown_code.expand("# show: ipu_tutorials.models.helper\n\n\n"
                              "# show: ipu_tutorials.models.Model\nm = Model()", root)
    path = os.path.join(root, "ipu_tutorials", "models.py")
    with open(path, "w") as f:
        f.write(MODELS.replace("x = x * 2", "x = x * 3"))
    expected = shown_code.expand("# show: ipu_tutorials.models.helper\n\n\n"
                                 "# show: ipu_tutorials.models.Model\nm = Model()", root)
    assert shown_code.drift("01_lesson", names, expected, built, root) == (
        "01_lesson: the notebook shows an older ipu_tutorials.models.Model: "
        f"{os.path.join('ipu_tutorials', 'models.py')}:20 has `x = x * 3` where the notebook "
        "has `x = x * 2`")


def test_lines_the_package_dropped_from_a_definition_s_end_are_drift_too(root):
    cell = "# show: ipu_tutorials.models.Model\nm = Model()"
    built = shown_code.expand(cell, root)
    with open(os.path.join(root, "ipu_tutorials", "models.py"), "w") as f:
        f.write(MODELS.replace("        return x\n", ""))  # Model's last line, not helper's
    assert shown_code.drift("01_lesson", ["ipu_tutorials.models.Model"],
                            shown_code.expand(cell, root), built, root) == (
        "01_lesson: the notebook shows an older ipu_tutorials.models.Model: "
        f"{os.path.join('ipu_tutorials', 'models.py')}:21 has no line where the notebook has "
        "`return x`")


def test_cells_that_differ_outside_the_shown_code_are_not_drift(root):
    expected = shown_code.expand("# show: ipu_tutorials.models.helper\nprint(1)", root)
    built = expected.replace("print(1)", "print(2)")
    assert shown_code.drift("01_lesson", ["ipu_tutorials.models.helper"], expected, built,
                            root) is None


def test_a_walkthrough_that_copies_the_package_is_told_to_show_it(root):
    copied = textwrap.dedent('''\
        # %%
        class Renamed(torch.nn.Module):
            def forward(self, x: int):  # the same code, renamed, annotated and commented
                x = x + 1
                x = x * 2
                return x


        def helper(x):
            return x
        ''')
    assert shown_code.hand_copies("01_lesson", copied, root) == [
        "01_lesson: line 2 defines Renamed as ipu_tutorials.models.Model does: show it with "
        "`# show: ipu_tutorials.models.Model` instead of a copy"]  # helper: too short to count


def test_code_that_differs_from_the_package_is_not_a_copy(root):
    own = ("class Model(torch.nn.Module):\n    def forward(self, x):\n        x = x + 1\n"
           "        x = x * 5\n        return x\n")
    assert shown_code.hand_copies("01_lesson", own, root) == []
    assert shown_code.hand_copies("01_lesson", "def (:", root) == [
        "01_lesson: line 1 is not Python: invalid syntax"]
