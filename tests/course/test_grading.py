"""Grading a class: a correct, a wrong, a crashing and two never-ending submissions, each scored
right, and the grader's run goes on to write its gradebook."""
import csv
import os

import nbformat
import pytest

from ipu_tutorials.course import cli, editions, grading

from .stored import CHECKOUT

LESSON = "04_pipelining"
RIGHT = {"smallest_accumulation-answer": "my_accumulation = 2 * 4 - 1",
         "combined_batch-answer": "my_images_per_call = 8000",
         "balance_two_ipus-answer": 'my_split = poptorch.PipelinedExecution(\n'
                                    '    poptorch.Stage("B1").ipu(0),\n'
                                    '    poptorch.Stage("B2").ipu(0),\n'
                                    '    poptorch.Stage("B3", "B4").ipu(1))'}
WRONG = {"combined_batch-answer": "my_images_per_call = 40 * 10 * 10"}  # the rest left as given
CRASH = {**RIGHT, "combined_batch-answer": "import os\nos._exit(1)  # the kernel dies"}
# Endless cells that sleep rather than spin: the grader treats them alike, and they leave the
# cores to the rest of the suite while the time limits run out.
LOOP = {**RIGHT, "smallest_accumulation-answer": "import time\nwhile True:\n    time.sleep(0.1)"}
STUBBORN = {**RIGHT, "smallest_accumulation-answer": "import signal, time\n"
            "signal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    time.sleep(0.1)"}
# Seconds. CELL interrupts LOOP's endless cell, and every other cell must finish inside it: a
# check takes a few seconds on an idle machine and many more on a loaded one (the test waits
# out CELL once, asleep). NOTEBOOK is as generous. STUBBORN ignores interrupts, so only a
# notebook's limit ends it: it is graded alone under STUBBORN_LIMIT, and scores nothing however
# slow the machine is.
# was wrong: limits of 12 s a cell and 40 s a notebook failed checks on a loaded machine
CELL, NOTEBOOK, STUBBORN_LIMIT = 60, 600, 20


def stored() -> nbformat.NotebookNode:
    return nbformat.read(os.path.join(CHECKOUT.notebooks, f"{LESSON}.ipynb"), as_version=4)


def submission(answers: dict) -> nbformat.NotebookNode:
    """The lesson's student edition, cut to its exercises (so the test runs in seconds), with
    the learner's answers typed into the answer cells."""
    nb = editions.student_edition(stored())
    kept = [nbformat.v4.new_code_cell("from ipu_tutorials import poptorch")]
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if editions.MODULE.search(cell.source) or grade_id:
            kept.append(cell)
        if grade_id in answers:
            cell.source = answers[grade_id]
    nb.cells = kept
    return nb


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The class graded: {(learner, exercise): score} and the grader's output folder."""
    course = tmp_path_factory.mktemp("course")
    editions.build([LESSON], str(course), CHECKOUT)
    folder = course / "submitted"
    for learner, answers in (("ada", RIGHT), ("bo", WRONG), ("cy", CRASH), ("dee", LOOP),
                             ("eve", STUBBORN)):
        os.makedirs(folder / learner / LESSON)
        nbformat.write(submission(answers), folder / learner / LESSON / f"{LESSON}.ipynb")
    (folder / "notes.ipynb").write_text("not a notebook")
    stubborn = folder / "eve" / LESSON / f"{LESSON}.ipynb"
    alone = grading.grade_one("eve", str(stubborn), str(course), CELL, STUBBORN_LIMIT)
    stubborn.unlink()
    out = tmp_path_factory.mktemp("grades")
    # the course directory: the folder's parent, by default
    scores = grading.grade(str(folder), str(out), cell_timeout=CELL, timeout=NOTEBOOK)
    return {(s.learner, s.exercise): s for s in scores + alone}, out


def points(graded, learner) -> dict:
    return {exercise: s.points for (who, exercise), s in graded[0].items() if who == learner}


def test_a_correct_submission_gets_every_point(graded):
    assert points(graded, "ada") == {"smallest_accumulation": 1, "combined_batch": 1,
                                     "balance_two_ipus": 2}
    assert graded[0][("ada", "combined_batch")].feedback.startswith("Correct! ")


def test_a_wrong_submission_gets_none_and_the_feedback_it_saw(graded):
    assert set(points(graded, "bo").values()) == {0}
    assert "multiply by the replicationFactor too" in graded[0][("bo", "combined_batch")].feedback
    assert "replace the `...`" in graded[0][("bo", "balance_two_ipus")].feedback


def test_a_crashing_submission_costs_its_learner_the_points_not_the_grader_its_run(graded):
    assert set(points(graded, "cy").values()) == {0}
    assert "could not run to the end" in graded[0][("cy", "combined_batch")].feedback


def test_an_endless_cell_is_interrupted_and_the_next_exercises_still_count(graded):
    assert points(graded, "dee") == {"smallest_accumulation": 0, "combined_batch": 1,
                                     "balance_two_ipus": 2}


def test_an_endless_cell_that_ignores_interrupts_is_killed_at_the_time_limit(graded):
    assert set(points(graded, "eve").values()) == {0}
    assert (f"did not finish within {STUBBORN_LIMIT} s" in
            graded[0][("eve", "combined_batch")].feedback)


def test_the_gradebook_and_its_summary(graded):
    scores, out = graded
    with open(out / "gradebook.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(scores) - 3 == 12  # eve was graded alone
    assert {r["learner"] for r in rows} == {"ada", "bo", "cy", "dee"}
    page = (out / "summary.html").read_text()
    assert page.count("class='bar'") == 3  # a bar per exercise
    assert "multiply by the replicationFactor too" in page and "<script" not in page


def test_learners_and_their_notebooks_are_found_in_either_layout(tmp_path):
    (tmp_path / "ada" / "04").mkdir(parents=True)
    (tmp_path / "ada" / "04" / "a.ipynb").write_text("{}")
    (tmp_path / "bo.ipynb").write_text("{}")
    assert grading.submissions(str(tmp_path)) == [
        ("ada", str(tmp_path / "ada" / "04" / "a.ipynb")), ("bo", str(tmp_path / "bo.ipynb"))]


def test_the_check_cells_come_from_the_course_directory_it_is_given(tmp_path):
    # was wrong: the grader rebuilt the instructor edition from the package's notebooks/
    editions.build([LESSON], str(tmp_path), CHECKOUT)
    path = tmp_path / "source" / LESSON / f"{LESSON}.ipynb"
    nb = nbformat.read(path, as_version=4)
    check = editions.exercises_of(nb)[0].check_cell
    nb.cells[check].source = "exercises.smallest_accumulation.check(7)  # the instructor's edit"
    nbformat.write(nb, path)
    assert grading.instructor(str(tmp_path), LESSON).cells[check].source.endswith("edit")
    with pytest.raises(ValueError, match=f"no instructor edition of {LESSON} at .*: write it with "
                                         f"ipu-course editions"):
        grading.instructor(str(tmp_path / "elsewhere"), LESSON)


def test_a_copy_of_the_learners_notebook_without_nbgrader_metadata_is_graded_too():
    learner = stored()  # as handed out from notebooks/: check cells known by their cell ids
    graded = {g.name: g for g in editions.exercises_of(learner)}
    cells = grading.check_cells(learner, graded)
    assert ({name: cell.source for name, cell in cells.items()} ==
            {g.name: learner.cells[g.check_cell].source for g in graded.values()})


def test_the_command_line_names_its_files_and_refuses_a_folder_outside_a_course(tmp_path, capsys):
    (tmp_path / "submitted").mkdir()
    assert cli.main(["grade", str(tmp_path / "submitted")]) == 2
    assert "is not a course directory (no source/ in it)" in capsys.readouterr().err
    editions.build([LESSON], str(tmp_path), CHECKOUT)
    assert cli.main(["grade", str(tmp_path / "submitted") + "/"]) == 0
    # was wrong: "grades//gradebook.csv"
    assert f"{tmp_path / 'grades' / 'gradebook.csv'} and " in capsys.readouterr().out
