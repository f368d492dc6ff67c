"""The lessons' editions: the learner's notebook holds starting code and no solution, the course
directory is built from it in seconds with the repository untouched, and every reference
solution passes its check in its own lesson."""
import json
import os
import re
import stat
import subprocess
import time

import nbformat
import pytest
from nbclient import NotebookClient

from ipu_tutorials.classroom.exercises.base import is_verdict
from ipu_tutorials.course import editions
from ipu_tutorials.course.checkout import CourseError
from tests.browser.conftest import can_run_lessons

from .stored import CHECKOUT
from .teaching_page import commands, run

LESSONS = editions.lessons([], CHECKOUT)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Every lesson's editions, built once, with the build's seconds and git's status around it."""
    out = tmp_path_factory.mktemp("course")
    before = git_status()
    started = time.perf_counter()
    editions.build([], str(out), CHECKOUT)
    return out, time.perf_counter() - started, before, git_status()


def git_status() -> str:
    return subprocess.run(["git", "status", "--porcelain"], cwd=CHECKOUT.root, check=True,
                          capture_output=True, text=True).stdout


def read(out, folder: str, lesson: str) -> nbformat.NotebookNode:
    return nbformat.read(os.path.join(out, folder, lesson, f"{lesson}.ipynb"), as_version=4)


def stored(lesson: str) -> nbformat.NotebookNode:
    return nbformat.read(os.path.join(CHECKOUT.notebooks, f"{lesson}.ipynb"), as_version=4)


def flat(path: str) -> str:
    """A notebook file as one string: sources, outputs, metadata and widget state alike."""
    with open(path, encoding="utf-8") as f:
        text = json.dumps(json.load(f), ensure_ascii=False)
    return text.encode().decode("unicode_escape", errors="ignore")


def verdicts(cell) -> list[str]:
    """What a check cell's outputs say: its "Correct! ..." or "Not yet: ..." (a check that
    trains may print a compilation bar before it)."""
    shown = [o.get("data", {}).get("text/plain", "") for o in cell.outputs]
    return [text for text in shown if is_verdict(text)]


def distinctive(lesson: str) -> list[str]:
    """What would give a solution away: each line of each solution that neither the starting
    code nor the lesson's other cells hold."""
    nb = stored(lesson)
    graded = editions.exercises_of(nb)
    taught = "\n".join(c.source for i, c in enumerate(nb.cells)
                       if i not in {g.answer_cell for g in graded})
    return [line.strip() for g in graded for line in g.exercise.solution_code.splitlines()
            if len(line.strip()) > 3 and not line.strip().startswith("#")
            and line.strip() not in taught + "\n" + g.exercise.starting_code]


def test_both_editions_of_every_lesson_in_well_under_a_minute_and_git_stays_clean(built):
    out, seconds, before, after = built
    assert seconds < 60
    assert after == before
    for lesson in LESSONS:
        for folder in ("source", "release"):
            nbformat.validate(read(out, folder, lesson))


def test_the_editions_can_be_read_by_others_on_a_shared_drive(built):
    # was wrong: mkstemp wrote every edition with mode 0600
    out = built[0]
    umask = os.umask(0)
    os.umask(umask)
    for path in (out / "nbgrader_config.py", out / "source" / LESSONS[0] / f"{LESSONS[0]}.ipynb",
                 out / "release" / LESSONS[0] / f"{LESSONS[0]}.ipynb"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask, path


@pytest.mark.parametrize("lesson", LESSONS)
def test_no_solution_is_in_the_learners_notebook_or_the_student_edition(built, lesson):
    secrets = distinctive(lesson)
    assert secrets, f"{lesson}: no solution found to look for"
    for path in (os.path.join(CHECKOUT.notebooks, f"{lesson}.ipynb"),
                 os.path.join(built[0], "release", lesson, f"{lesson}.ipynb")):
        text = flat(path)
        leaked = [s for s in secrets if s in text]
        assert not leaked, f"{path} holds {leaked}"
        assert "BEGIN SOLUTION" not in text and "Correct!" not in text


@pytest.mark.parametrize("lesson", LESSONS)
def test_the_learners_notebook_says_not_yet_under_each_check_until_answered(lesson):
    nb = stored(lesson)
    graded = editions.exercises_of(nb)
    assert len(graded) >= 2
    for g in graded:
        assert nb.cells[g.answer_cell].source == g.exercise.starting_code
        shown = verdicts(nb.cells[g.check_cell])
        assert len(shown) == 1 and shown[0].startswith("Not yet: "), (g.name, shown)
    # each lesson says how checks, hints and solutions work just before its first exercise
    first = graded[0]
    how_to = [c.source for c in nb.cells[:first.answer_cell] if "How the exercises work" in c.source]
    assert (how_to and f"`exercises.{first.name}.hint()`" in how_to[0]
            and f"`exercises.{first.name}.solution()`" in how_to[0])


@pytest.mark.parametrize("lesson", LESSONS)
def test_the_student_edition_is_the_learners_notebook_with_nbgrader_metadata(built, lesson):
    student = read(built[0], "release", lesson)
    learner = stored(lesson)
    assert [c.source for c in student.cells] == [c.source for c in learner.cells]
    for g in editions.exercises_of(student):
        answer, check = student.cells[g.answer_cell], student.cells[g.check_cell]
        assert answer.metadata["nbgrader"]["grade_id"] == f"{g.name}-answer"
        assert answer.metadata["nbgrader"]["solution"] and not answer.metadata["nbgrader"]["grade"]
        assert check.metadata["nbgrader"]["locked"] and check.metadata["editable"] is False
        assert not check.outputs
    assert student.metadata["widgets"] == learner.metadata["widgets"]


@pytest.mark.parametrize("lesson", LESSONS)
def test_the_instructor_edition_follows_nbgrader(built, lesson):
    instructor = read(built[0], "source", lesson)
    graded = editions.exercises_of(instructor)
    for g in graded:
        answer, check = instructor.cells[g.answer_cell], instructor.cells[g.check_cell]
        assert answer.source == (f"{g.exercise.starting_code}\n### BEGIN SOLUTION\n"
                                 f"{g.exercise.solution_code}\n### END SOLUTION")
        assert answer.metadata["nbgrader"]["solution"]
        meta = check.metadata["nbgrader"]
        assert meta["grade"] and meta["locked"] and meta["points"] == g.points
        assert check.source == stored(lesson).cells[g.check_cell].source and not check.outputs
    ids = [c.metadata["nbgrader"]["grade_id"] for c in instructor.cells if "nbgrader" in c.metadata]
    assert len(ids) == len(set(ids)) == 2 * len(graded)


def test_the_course_directory_carries_nbgraders_settings(built):
    config = (built[0] / "nbgrader_config.py").read_text()
    assert f"c.Execute.timeout = {editions.CELL_TIMEOUT}" in config
    assert 'c.ClearSolutions.code_stub = {"python": ""}' in config
    compile(config, "nbgrader_config.py", "exec")


def test_an_answer_cell_in_a_walkthrough_holds_no_code():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("from ipu_tutorials.classroom.exercises import pipelining "
                                  "as exercises"),
        nbformat.v4.new_code_cell("my_accumulation = 7"),
        nbformat.v4.new_code_cell("exercises.smallest_accumulation.check(my_accumulation)")])
    nb.cells[1].metadata["tags"] = ["answer"]
    with pytest.raises(ValueError, match="holds code: the starting code and the solution belong"):
        editions.learner_edition(nb)
    nb.cells[1].source = "# starting code: exercises.smallest_accumulation.starting_code"
    learner = editions.learner_edition(nb)
    assert learner.cells[1].source.startswith("**How the exercises work.**")
    assert learner.cells[2].source == "my_accumulation = ...  # your answer"
    nb.cells.pop()
    with pytest.raises(ValueError, match="answer cell 1 has no check cell"):
        editions.learner_edition(nb)


def test_an_unknown_lesson_is_one_clear_line():
    with pytest.raises(CourseError, match="no stored notebook named 99_nothing; known: 01_"):
        editions.lessons(["99_nothing"], CHECKOUT)


def test_the_teachers_page_lists_every_exercise_with_its_skill():
    with open(os.path.join(CHECKOUT.root, "docs", "teaching.md"), encoding="utf-8") as f:
        page = re.sub(r"<!-- claim: [\w-]+ -->", "", f.read())  # the ledger's markers show nowhere
    for lesson in LESSONS:
        for graded in editions.exercises_of(stored(lesson)):
            assert f"(`{graded.name}`) | {graded.exercise.skill} |" in page, graded.name


@pytest.mark.skipif(can_run_lessons(), reason="run in JupyterLab by tests/browser/test_lessons.py, "
                    "which checks every solution the same way")
@pytest.mark.parametrize("lesson", LESSONS)
def test_every_reference_solution_passes_its_check_in_its_lesson(built, lesson):
    """The instructor edition run top to bottom, as nbgrader's autograder runs it: each
    exercise's solution, in the names the lesson defined before it, passes its own check.
    Where the browser tests can run, they run each instructor edition once for this and for
    its live explorers; here, without a browser, a plain kernel runs it."""
    nb = read(built[0], "source", lesson)
    folder = built[0] / "source" / lesson
    NotebookClient(nb, timeout=editions.CELL_TIMEOUT, kernel_name="python3",
                   resources={"metadata": {"path": str(folder)}}).execute()
    for g in editions.exercises_of(nb):
        shown = verdicts(nb.cells[g.check_cell])
        assert len(shown) == 1 and shown[0].startswith("Correct! "), (g.name, shown)


def test_the_pages_commands_write_the_course_directory_git_ignores(tmp_path):
    every, some = commands("The course directory")
    assert every == "ipu-course editions --out course"
    run(f"{some} --root {CHECKOUT.root}", tmp_path, 120)  # the page runs them in the checkout
    assert (sorted(p.name for p in (tmp_path / "course" / "source").iterdir()) ==
            ["04_pipelining", "13_ipuconfig"])
    run(f"{every} --root {CHECKOUT.root}", tmp_path, 120)
    assert sorted(p.name for p in (tmp_path / "course" / "release").iterdir()) == LESSONS
    ignored = subprocess.run(["git", "check-ignore", "-q", "course/release"],
                             cwd=CHECKOUT.root)
    assert ignored.returncode == 0, "course/ is not ignored by git"


def test_the_pages_nbgrader_extra_exists_and_the_tests_install_it():
    install = commands("With nbgrader")[0]
    assert install == 'pip install -e ".[nbgrader]"'
    with open(os.path.join(CHECKOUT.root, "pyproject.toml"), encoding="utf-8") as f:
        project = f.read()
    assert re.search(r'^nbgrader = \[.*"nbgrader>=0\.9\.6', project, re.M)
    assert '"ipu-tutorials[nbgrader]"' in project.split("\ntest = [", 1)[1].split("]\n", 1)[0]
