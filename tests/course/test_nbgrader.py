"""nbgrader 0.9, for real, run as docs/teaching.md tells an instructor to run it: its release is
the project's student edition, its autograder scores three learners (every answer right,
nothing changed, one wrong answer) as the project's grader does, its feedback is written, and
its validator fails the untouched and the wrong notebook.

Lesson 3 (blocks and stages) is the class's lesson: it is the shortest to run (no training:
each of the nine notebook runs below takes seconds on an idle machine) and it has a code
exercise worth 2 points beside two 1-point values, so one wrong answer gives a partial score
(3 of 4) that a grader could get wrong. Lesson 4's long training cell is what the time limit in
nbgrader_config.py is for (test_editions.py checks it is written).
"""
import csv
import re

import nbformat
import pytest

from ipu_tutorials.course import editions

from .stored import CHECKOUT
from .teaching_page import commands, run

pytest.importorskip("nbgrader", reason="the nbgrader test needs nbgrader: pip install -e '.[test]'")

LESSON = "03_blocks_and_stages"
PAGE_LESSON, PAGE_LEARNER = "04_pipelining", "ada"  # as the page writes its commands
COMMAND_SECONDS = 900  # each command, at most (a learner's notebook runs in seconds)
RIGHT = {"two_ipus-answer": 'my_strategy = poptorch.PipelinedExecution(\n'
                            '    poptorch.Stage("B1", "B2").ipu(0), poptorch.Stage("B3", "B4").ipu(1))',
         "move_a_block-answer": 'my_strategy = poptorch.PipelinedExecution(\n'
                                '    poptorch.Stage("A").ipu(0), poptorch.Stage("B", "C").ipu(1))',
         "ipus_reserved-answer": "my_ipu_count = 2 * 4  # 3 IPUs rounded up, per replica"}
LEARNERS = {"ada": RIGHT, "bo": {}, "cy": {**RIGHT, "ipus_reserved-answer": "my_ipu_count = 6"}}
EXPECTED = {"ada": 5, "bo": 0, "cy": 4}


def answered(release: nbformat.NotebookNode, answers: dict) -> nbformat.NotebookNode:
    nb = nbformat.from_dict(release)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell.source = answers[grade_id]
    return nb


def hand_in(course) -> nbformat.NotebookNode:
    """Each learner's copy of nbgrader's release, answered, in submitted/; the release."""
    release = nbformat.read(course / "release" / LESSON / f"{LESSON}.ipynb", as_version=4)
    for learner, answers in LEARNERS.items():
        folder = course / "submitted" / learner / LESSON
        folder.mkdir(parents=True)
        nbformat.write(answered(release, answers), folder / f"{LESSON}.ipynb")
    return release


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """The page's nbgrader commands run in a course directory, the learners' notebooks handed
    in before autograde; then the page's command of the project's grader. Returns the course
    directory, the project's student edition, nbgrader's release and {command: output}."""
    course = tmp_path_factory.mktemp("class") / "course"
    editions.build([LESSON], str(course), CHECKOUT)
    ours = nbformat.read(course / "release" / LESSON / f"{LESSON}.ipynb", as_version=4)
    page = commands("With nbgrader")
    assert page[:2] == ['pip install -e ".[nbgrader]"', "cd course"]
    logs, release = {}, None
    for command in page[2:]:
        command = command.replace(PAGE_LESSON, LESSON)
        verb = command.split()[1]
        if verb == "autograde":
            release = hand_in(course)
        for learner in LEARNERS if verb == "validate" else [PAGE_LEARNER]:
            mine = command.replace(f"/{PAGE_LEARNER}/", f"/{learner}/")
            logs[f"{verb} {learner}" if verb == "validate" else verb] = run(
                mine, course, COMMAND_SECONDS)
    (grading,) = [c for c in commands("Running a class") if c.startswith("ipu-course grade")]
    logs["grading"] = run(grading, course.parent, COMMAND_SECONDS)
    return course, ours, release, logs


def test_the_page_runs_every_nbgrader_step(course):
    assert {"generate_assignment", "autograde", "generate_feedback", "export", "validate ada",
            "validate bo", "validate cy", "grading"} <= set(course[3])


def test_nbgraders_release_is_the_project_student_edition(course):
    _, ours, release, logs = course
    assert "Removing existing assignment" in logs["generate_assignment"]  # no silent skip
    # the same cells: the starting code (no "YOUR CODE HERE"), the lesson's outputs kept
    assert ([(c.source.strip(), c.get("outputs")) for c in release.cells] ==
            [(c.source.strip(), c.get("outputs")) for c in ours.cells])
    assert release.metadata["widgets"] == ours.metadata["widgets"]


def test_nbgrader_and_the_projects_grader_give_each_learner_the_same_score(course):
    directory = course[0]
    with open(directory / "grades.csv", newline="") as f:
        by_nbgrader = {row["student_id"]: float(row["score"]) for row in csv.DictReader(f)}
    with open(directory / "grades" / "gradebook.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    by_project = {learner: sum(int(r["points"]) for r in rows if r["learner"] == learner)
                  for learner in LEARNERS}
    assert by_nbgrader == by_project == EXPECTED
    assert {r["max_points"] for r in rows if r["exercise"] == "two_ipus"} == {"2"}


def test_nbgrader_reads_every_check_as_a_test_without_a_warning(course):
    log = course[3]["autograde"]
    assert "cannot be converted to a float" not in log  # was wrong: every check cell warned
    assert "Timeout" not in log and "Interrupting" not in log
    for learner in LEARNERS:
        assert (course[0] / "feedback" / learner / LESSON / f"{LESSON}.html").is_file()


def test_validate_fails_the_untouched_and_the_wrong_notebook(course):
    logs = course[3]
    assert "Success! Your notebook passes all the tests." in logs["validate ada"]
    # was wrong: "Success!" for both, as no check cell failed on "Not yet"
    assert re.search(r"VALIDATION FAILED ON 3 CELL\(S\)!", logs["validate bo"])
    assert re.search(r"VALIDATION FAILED ON 1 CELL\(S\)!", logs["validate cy"])
    assert "Not yet: 6 for the IPUs reserved" in logs["validate cy"]
