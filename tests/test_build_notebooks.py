"""`python build_notebooks.py`, the `ipu-course` command run on its own checkout: the same
commands and flags, `build` the default; `--check` passes now and names what is stale, a
walkthrough copying the package's code is refused before any lesson runs, and `editions`
writes the editions without running one."""
import os
import subprocess
import sys

import pytest

import build_notebooks
from ipu_tutorials.course import cli, notebook_form, shown_code

LESSONS = sorted(f for f in os.listdir(build_notebooks.SOURCES) if f.endswith(".py"))


def test_check_mode_passes_now_and_fails_on_a_stale_notebook(tmp_path, monkeypatch):
    assert build_notebooks.main(["--check"]) == 0
    source = tmp_path / "walkthroughs"
    source.mkdir()
    original = os.path.join(build_notebooks.SOURCES, LESSONS[0])
    (source / LESSONS[0]).write_text(open(original).read() + "\n# %%\nprint('new')\n")
    monkeypatch.setattr(build_notebooks, "SOURCES", str(source))
    assert build_notebooks.main(["--check"]) == 1


def drifted_package(tmp_path, monkeypatch, old: str, new: str) -> None:
    """The builder's repository: a temporary copy whose tutorial/models.py has `old` -> `new`."""
    models = tmp_path / "ipu_tutorials" / "tutorial" / "models.py"
    models.parent.mkdir(parents=True)
    text = open(os.path.join(build_notebooks.ROOT, "ipu_tutorials", "tutorial", "models.py")).read()
    assert text.count(old) == 1
    models.write_text(text.replace(old, new))
    (tmp_path / "pyproject.toml").write_text(
        open(os.path.join(build_notebooks.ROOT, "pyproject.toml")).read())
    monkeypatch.setattr(build_notebooks, "ROOT", str(tmp_path))


def test_check_names_the_lesson_the_definition_and_its_change_when_the_package_drifts(
        tmp_path, monkeypatch, capsys):
    drifted_package(tmp_path, monkeypatch, "self.layer4 = nn.Linear(256, 10)",
                    "self.layer4 = nn.Linear(256, 10, bias=False)")
    capsys.readouterr()
    assert build_notebooks.main(["--check", "03_blocks_and_stages"]) == 1
    line = next(n for n, text in enumerate(open(tmp_path / "ipu_tutorials" / "tutorial" / "models.py"),
                                           1) if "bias=False" in text)
    assert (f"stale: 03_blocks_and_stages: the notebook shows an older "
            f"ipu_tutorials.tutorial.models.Network: ipu_tutorials/tutorial/models.py:{line} has "
            f"`self.layer4 = nn.Linear(256, 10, bias=False)` where the notebook has "
            f"`self.layer4 = nn.Linear(256, 10)`") in capsys.readouterr().err.splitlines()


def test_build_refuses_a_walkthrough_that_copies_the_package_in_one_line(tmp_path, monkeypatch,
                                                                         capsys):
    source = tmp_path / "walkthroughs"
    source.mkdir()
    original = open(os.path.join(build_notebooks.SOURCES, "03_blocks_and_stages.py")).read()
    pasted = shown_code.expand(original, build_notebooks.ROOT)  # the package's code pasted in
    (source / "03_blocks_and_stages.py").write_text(pasted)
    monkeypatch.setattr(build_notebooks, "SOURCES", str(source))
    assert build_notebooks.main(["03_blocks_and_stages"]) == 1
    lines = [f"error: 03_blocks_and_stages: line {line} defines {name} as "
             f"ipu_tutorials.tutorial.models.{name} does: show it with "
             f"`# show: ipu_tutorials.tutorial.models.{name}` instead of a copy"
             for line, name in ((pasted.splitlines().index(f"class {name}(nn.Module):") + 1, name)
                                for name in ("ConvLayer", "Network", "ThreeBlocks"))]
    assert capsys.readouterr().err.splitlines() == lines  # and no lesson ran
    assert build_notebooks.main(["--check", "03_blocks_and_stages"]) == 1


def test_build_refuses_a_marker_that_names_nothing_in_one_line(tmp_path, monkeypatch, capsys):
    source = tmp_path / "walkthroughs"
    source.mkdir()
    (source / "99_shown.py").write_text(
        "# %% [markdown]\n# # Lesson 99: Shown\n\n# %%\n# show: ipu_tutorials.tutorial.models.Nope\n")
    monkeypatch.setattr(build_notebooks, "SOURCES", str(source))
    assert build_notebooks.main(["99_shown"]) == 1
    assert capsys.readouterr().err.splitlines()[-1].startswith(
        "error: 99_shown: `# show: ipu_tutorials.tutorial.models.Nope`: ipu_tutorials.tutorial.models "
        "defines no top-level class or function 'Nope'")


def test_build_refuses_a_lesson_line_that_uses_a_simulator_extra_unmarked(tmp_path, monkeypatch,
                                                                           capsys):
    source, notebooks = tmp_path / "walkthroughs", tmp_path / "notebooks"
    source.mkdir()
    (source / "99_extras.py").write_text(
        "# %% [markdown]\n# # Lesson 99: Extras\n\n# %%\nfrom ipu_tutorials import poptorch\n\n"
        "said = poptorch.OutOfMemoryError  # simulator extra\n"
        "def unsaid():\n    return poptorch.OutOfMemoryError\n\n"
        "# %%\nunsaid()\nreal = poptorch.Error\n")
    monkeypatch.setattr(build_notebooks, "SOURCES", str(source))
    monkeypatch.setattr(build_notebooks, "NOTEBOOKS", str(notebooks))
    monkeypatch.setattr(build_notebooks, "STATIC", str(tmp_path / "static"))
    assert build_notebooks.main(["99_extras"]) == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error")]
    assert errors == [  # the line that used it, not the one that called it; the marked one passes
        "error: 99_extras: `return poptorch.OutOfMemoryError` uses the simulator extra "
        "poptorch.OutOfMemoryError: mark its line `# simulator extra`"]
    assert not (notebooks / "99_extras.ipynb").exists()


def test_editions_writes_the_editions_without_running_a_notebook(tmp_path, monkeypatch):
    monkeypatch.setattr(notebook_form, "execute", lambda *_: pytest.fail("re-executed"))
    assert build_notebooks.main(["editions", "04_pipelining", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "release" / "04_pipelining" / "04_pipelining.ipynb").exists()


@pytest.mark.parametrize("argv, call", [
    ([], ("build", [], False)),
    (["04_pipelining"], ("build", ["04_pipelining"], False)),
    (["--check"], ("build", [], True)),
    (["build", "04", "--check"], ("build", ["04"], True)),
    (["times", "01"], ("times", ["01"])),
    (["diagrams"], ("diagrams",)),
    (["pages", "--check"], ("pages", True)),
], ids=lambda value: " ".join(value) if isinstance(value, list) and value else None)
def test_the_script_is_the_course_command_on_its_checkout(monkeypatch, argv, call):
    calls = []
    function, *arguments = call
    monkeypatch.setattr(cli, function, lambda *args: calls.append(args) or 0)
    assert build_notebooks.main(argv) == 0
    assert calls == [(build_notebooks.checkout(), *arguments)]


def test_a_spelling_the_command_lacks_is_one_argparse_line():
    # was: --student DIR, --html DIR, --times and --diagrams; now `editions --out DIR`, ...
    done = subprocess.run([sys.executable, "build_notebooks.py", "--student", "course"],
                          cwd=build_notebooks.ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "build_notebooks.py: error: unrecognized arguments: --student")
