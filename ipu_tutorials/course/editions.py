"""The lessons' editions: the learner's notebook, and the instructor's course directory for nbgrader.

    ipu-course editions               # every lesson, into editions/ of the checkout
    ipu-course editions 04 13 --out course

One source of truth: each exercise (`classroom/exercises/<module>.py`) declares its starting
code and its solution, and a lesson's answer cell (tagged "answer" in its walkthrough) only says
which exercise it belongs to: the check cell after it. From there:

- the learner's notebook (`notebooks/`, what `ipu-course build` executes and stores) holds
  each exercise's starting code, so its checks say "Not yet" until the learner answers;
- the instructor edition adds the solution to each answer cell, between nbgrader's markers;
- the student edition is the learner's notebook with nbgrader's cell metadata.

Nothing is re-executed: both editions are the stored notebooks transformed, in seconds, laid
out as nbgrader's course directory with its settings (`nbgrader_config.py`):

    DIR/source/<lesson>/<lesson>.ipynb   instructor edition: starting code, then the solution
                                         (`### BEGIN SOLUTION` / `### END SOLUTION`); nbgrader
                                         metadata on every answer cell and graded check cell
    DIR/release/<lesson>/<lesson>.ipynb  student edition: what `nbgrader generate_assignment`
                                         writes from source/ under DIR/nbgrader_config.py
    DIR/nbgrader_config.py               a cell time limit that fits every lesson; releases
                                         that keep the starting code and the lesson's outputs
"""
from __future__ import annotations

import copy
import dataclasses
import importlib
import os
import re

import nbformat

from ..classroom.exercises.base import Exercise
from ..support.atomic_io import atomic_open
from .checkout import Checkout, choose

OUT = "editions"  # the course directory's default place in the checkout (ignored by git)
ANSWER = "answer"  # the tag of an answer cell
MODULE = re.compile(r"from ipu_tutorials\.classroom\.exercises import (\w+) as exercises")
CHECK = re.compile(r"\bexercises\.(\w+)\.check\(")
SCHEMA_VERSION = 3  # nbgrader's cell-metadata schema
# Seconds per cell: lesson 4's training cell takes seconds on an idle 2-core machine and over
# 300 s on one loaded 7 times over (measured); a limit is there to stop a runaway cell.
CELL_TIMEOUT = 600
HOW_TO = ("**How the exercises work.** Each exercise has an answer cell holding starting code "
          "(replace each `...` with your answer, or change the code as the exercise asks) and a "
          "check cell under it. Run the answer cell first, then the check: it says whether your "
          "answer is right and, if not yet, what to look at. Stuck? Run "
          "`exercises.{name}.hint()` in a new cell for a hint, or `exercises.{name}.solution()` "
          "for a worked solution; every exercise has both.")
NBGRADER_CONFIG = f'''\
"""nbgrader's settings for this course (written by ipu-course editions)."""
c = get_config()  # noqa: F821 (nbgrader defines it)

# nbgrader's default of 30 s per cell interrupts lessons that train (lesson 4's six epochs),
# all the more on a busy machine: the limit of the project's own grader and of the build.
c.Execute.timeout = {CELL_TIMEOUT}

# Releases as the project's student edition: each answer cell keeps the exercise's starting code
# (the solution region leaves nothing behind, no "YOUR CODE HERE" stub), and the lesson keeps its
# outputs, which the exercises refer to ("the model printed above").
c.ClearSolutions.code_stub = {{"python": ""}}
c.ClearOutput.enabled = False

# release/ already holds the project's student edition: generate_assignment rewrites it (the same
# cells, with nbgrader's checksums) instead of skipping the lesson.
c.GenerateAssignment.force = True
'''


@dataclasses.dataclass(frozen=True)
class Graded:
    """One exercise as a notebook holds it: its answer cell and the cell that checks it."""

    name: str  # the exercise's attribute in its module, e.g. "balance_bert"
    exercise: Exercise
    answer_cell: int
    check_cell: int
    check_id: str | None = None  # the check cell's id, which copies of the notebook keep

    @property
    def points(self) -> int:
        return 2 if self.exercise.writes_code else 1


def exercises_of(nb: nbformat.NotebookNode) -> list[Graded]:
    """Each answer cell of the lesson, paired with the next cell that calls a check.

    Raises:
        ValueError: an answer cell with no check after it.
    """
    module = next((m.group(1) for c in nb.cells if (m := MODULE.search(c.source))), None)
    if module is None:
        return []
    exercises = importlib.import_module(f"ipu_tutorials.classroom.exercises.{module}")
    graded = []
    for index, cell in enumerate(nb.cells):
        if ANSWER not in cell.metadata.get("tags", []):
            continue
        check = next((i for i in range(index + 1, len(nb.cells))
                      if nb.cells[i].cell_type == "code" and CHECK.search(nb.cells[i].source)), None)
        if check is None:
            raise ValueError(f"answer cell {index} has no check cell (exercises.NAME.check(...)) "
                             f"after it")
        name = CHECK.search(nb.cells[check].source).group(1)
        graded.append(Graded(name, getattr(exercises, name), index, check,
                             nb.cells[check].get("id")))
    return graded


def learner_edition(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A lesson as the learner gets it: each answer cell holds its exercise's starting code, and
    the first exercise says how checks, hints and solutions work.

    Raises:
        ValueError: an answer cell of the walkthrough holds code (it would be lost).
    """
    nb = copy.deepcopy(nb)
    graded = exercises_of(nb)
    for g in graded:
        cell = nb.cells[g.answer_cell]
        if any(line.strip() and not line.lstrip().startswith("#")
               for line in cell.source.splitlines()):
            raise ValueError(f"answer cell {g.answer_cell} ({g.name}) holds code: the starting "
                             f"code and the solution belong in the exercise's module")
        cell.source = g.exercise.starting_code
    if graded:
        imports = next(i for i, c in enumerate(nb.cells) if MODULE.search(c.source))
        nb.cells.insert(imports + 1, nbformat.v4.new_markdown_cell(HOW_TO.format(name=graded[0].name)))
    return nb


def nbgrader_metadata(grade_id: str, solution: bool, points: int = 0) -> dict:
    """nbgrader's cell metadata: an answer cell (solution) or a locked, graded test cell."""
    meta = {"grade": not solution, "grade_id": grade_id, "locked": not solution,
            "schema_version": SCHEMA_VERSION, "solution": solution}
    if not solution:
        meta["points"] = points
    return meta


def _for_nbgrader(stored: nbformat.NotebookNode, edition: str) -> nbformat.NotebookNode:
    """The stored lesson with nbgrader metadata on its exercises' cells and their outputs
    cleared (they show what the starting code got)."""
    nb = copy.deepcopy(stored)
    for g in exercises_of(nb):
        answer, check = nb.cells[g.answer_cell], nb.cells[g.check_cell]
        answer.metadata["nbgrader"] = nbgrader_metadata(f"{g.name}-answer", solution=True)
        check.metadata["nbgrader"] = nbgrader_metadata(g.name, False, g.points)
        for cell in (answer, check):
            cell.outputs, cell.execution_count = [], None
    nb.metadata.setdefault("ipu_tutorials", {})["edition"] = edition
    return nb


def instructor_edition(stored: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """nbgrader's source: each answer cell's starting code followed by the solution."""
    nb = _for_nbgrader(stored, "instructor")
    for g in exercises_of(nb):
        cell = nb.cells[g.answer_cell]
        cell.source = (f"{g.exercise.starting_code}\n### BEGIN SOLUTION\n"
                       f"{g.exercise.solution_code}\n### END SOLUTION")
    return nb


def student_edition(stored: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The learner's notebook as nbgrader releases it: exercise cells that JupyterLab will not
    delete, and check cells it will not let the learner edit."""
    nb = _for_nbgrader(stored, "student")
    for g in exercises_of(nb):
        nb.cells[g.answer_cell].metadata["deletable"] = False
        nb.cells[g.check_cell].metadata.update(deletable=False, editable=False)
    return nb


def lessons(names: list[str], checkout: Checkout) -> list[str]:
    """The stored notebooks' names matching `names` (prefixes; all when empty).

    Raises:
        CourseError: the checkout has no notebooks/, or a name matches no stored notebook.
    """
    folder = checkout.need("notebooks").notebooks
    stored = sorted(f[:-6] for f in os.listdir(folder) if f.endswith(".ipynb"))
    return choose(names, stored, "stored notebook")


def write(text: str, path: str) -> None:
    """Atomically, with the modes of an ordinary new file (others can read it on a shared drive)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with atomic_open(path) as f:
        f.write(text)


def build(names: list[str], out: str, checkout: Checkout) -> list[str]:
    """Write both editions of each of the checkout's stored lessons named and nbgrader's
    settings under `out`; returns the notebooks written."""
    written = []
    for lesson in lessons(names, checkout):
        stored = nbformat.read(os.path.join(checkout.notebooks, f"{lesson}.ipynb"), as_version=4)
        for folder, nb in (("source", instructor_edition(stored)),
                           ("release", student_edition(stored))):
            path = os.path.join(out, folder, lesson, f"{lesson}.ipynb")
            write(nbformat.writes(nb) + "\n", path)
            written.append(path)
    write(NBGRADER_CONFIG, os.path.join(out, "nbgrader_config.py"))
    return written
