"""Classroom editions: built from the stored notebooks in seconds, the repository untouched, and
no solution recoverable from a student's file."""
import json
import os
import re
import subprocess
import time

import nbformat
import pytest

from ipu_tutorials.classroom import editions

LESSONS = editions.lessons([])


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Every lesson's editions, built once, with the build's seconds and git's status around it."""
    out = tmp_path_factory.mktemp("course")
    before = git_status()
    started = time.perf_counter()
    editions.build([], str(out))
    return out, time.perf_counter() - started, before, git_status()


def git_status() -> str:
    return subprocess.run(["git", "status", "--porcelain"], cwd=editions.ROOT, check=True,
                          capture_output=True, text=True).stdout


def read(out, folder: str, lesson: str) -> nbformat.NotebookNode:
    return nbformat.read(os.path.join(out, folder, lesson, f"{lesson}.ipynb"), as_version=4)


def stored(lesson: str) -> nbformat.NotebookNode:
    return nbformat.read(os.path.join(editions.NOTEBOOKS, f"{lesson}.ipynb"), as_version=4)


def distinctive(lesson: str) -> list[str]:
    """What would give a solution away: each line of each solution region that neither the
    starting code nor the lesson's own cells hold, and each check's stored "Correct!" feedback."""
    nb = stored(lesson)
    graded = editions.exercises_of(nb)
    exercise_cells = {i for g in graded for i in (g.solution_cell, g.check_cell)}
    taught = "\n".join(c.source for i, c in enumerate(nb.cells) if i not in exercise_cells)
    found = []
    for g in graded:
        taught_here = taught + "\n" + g.exercise.starting_code
        for match in editions.SOLUTION.finditer(nb.cells[g.solution_cell].source):
            found += [line.strip() for line in match.group(2).splitlines()
                      if len(line.strip()) > 3 and not line.strip().startswith("#")
                      and line.strip() not in taught_here]
        for output in nb.cells[g.check_cell].outputs:
            text = output.get("data", {}).get("text/plain", "")
            found += [text] if text.startswith("Correct") else []
    return found


def test_both_editions_of_every_lesson_in_well_under_a_minute_and_git_stays_clean(built):
    out, seconds, before, after = built
    assert seconds < 60
    assert after == before
    for lesson in LESSONS:
        for folder in ("source", "release"):
            nbformat.validate(read(out, folder, lesson))


@pytest.mark.parametrize("lesson", LESSONS)
def test_no_solution_is_recoverable_from_the_student_file(built, lesson):
    out = built[0]
    with open(os.path.join(out, "release", lesson, f"{lesson}.ipynb"), encoding="utf-8") as f:
        text = json.loads(f.read())  # source, outputs, metadata and widget state alike
    flat = json.dumps(text, ensure_ascii=False)
    flat = flat.encode().decode("unicode_escape", errors="ignore")
    secrets = distinctive(lesson)
    assert secrets, f"{lesson}: no solution found to look for"
    leaked = [s for s in secrets if s in flat]
    assert not leaked, f"{lesson} student edition holds {leaked}"
    assert "BEGIN SOLUTION" not in flat and "HIDDEN TESTS" not in flat


@pytest.mark.parametrize("lesson", LESSONS)
def test_the_student_cells_hold_the_starting_code_and_explorers_are_kept(built, lesson):
    out = built[0]
    student, instructor = read(out, "release", lesson), read(out, "source", lesson)
    for graded in editions.exercises_of(instructor):
        cell = student.cells[graded.solution_cell]
        starting = graded.exercise.starting_code.strip() or "= ...  # your answer"
        assert starting in cell.source and not cell.outputs
        assert cell.metadata["nbgrader"]["grade_id"] == f"{graded.name}-answer"
        assert not student.cells[graded.check_cell].outputs
    assert student.metadata["widgets"] == stored(lesson).metadata["widgets"]


@pytest.mark.parametrize("lesson", LESSONS)
def test_the_instructor_edition_follows_nbgrader(built, lesson):
    instructor = read(built[0], "source", lesson)
    graded = editions.exercises_of(instructor)
    assert len(graded) >= 2
    for g in graded:
        answer, check = instructor.cells[g.solution_cell], instructor.cells[g.check_cell]
        assert answer.metadata["nbgrader"]["solution"] and "### BEGIN SOLUTION" in answer.source
        meta = check.metadata["nbgrader"]
        assert meta["grade"] and meta["locked"] and meta["points"] == g.points
        assert re.search(r"### BEGIN HIDDEN TESTS\n.*assert _feedback.correct", check.source,
                         re.S)
    ids = [c.metadata["nbgrader"]["grade_id"] for c in instructor.cells if "nbgrader" in c.metadata]
    assert len(ids) == len(set(ids))


def test_a_solution_inside_a_function_keeps_its_indentation():
    graded = editions.Graded("x", type("E", (), {"starting_code": ""})(), 0, 1)
    source = ("def f(x):\n    ### BEGIN SOLUTION\n    y = x + 1\n    ### END SOLUTION\n"
              "    return y\n")
    assert editions.strip_solutions(source, graded) == \
        "def f(x):\n    y = ...  # your answer\n    return y\n"


def test_an_unknown_lesson_is_one_clear_line():
    with pytest.raises(SystemExit, match="no stored notebook named 99_nothing; known: 01_"):
        editions.lessons(["99_nothing"])


def test_the_teachers_page_lists_every_exercise_with_its_skill():
    with open(os.path.join(editions.ROOT, "docs", "teaching.md"), encoding="utf-8") as f:
        page = f.read()
    for lesson in LESSONS:
        for graded in editions.exercises_of(stored(lesson)):
            assert f"(`{graded.name}`) | {graded.exercise.skill} |" in page, graded.name


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_stored_solution_passes_its_check(lesson):
    nb = stored(lesson)
    for graded in editions.exercises_of(nb):
        outputs = nb.cells[graded.check_cell].outputs
        shown = [o.get("data", {}).get("text/plain", "") for o in outputs]
        assert any(text.startswith("Correct") for text in shown), (graded.name, shown)
