"""Classroom editions from the stored, executed notebooks: student and instructor, nbgrader-style.

    python -m ipu_tutorials.classroom.editions               # every lesson, into editions/
    python -m ipu_tutorials.classroom.editions 04 13 --out DIR

Nothing is re-executed: each edition is the stored notebook transformed, in seconds. The
layout is nbgrader's course directory, so an nbgrader user can point `--CourseDirectory.root`
at it as it is:

    DIR/source/<lesson>/<lesson>.ipynb   instructor edition: solutions shown, every exercise's
                                         solution cell and graded check cell carry nbgrader
                                         metadata (grade_id, points), and each check cell a
                                         hidden test that fails when the check says "Not yet"
    DIR/release/<lesson>/<lesson>.ipynb  student edition: each solution region replaced by the
                                         exercise's starting code; hidden tests, outputs and
                                         folding of exercise cells removed; explorers kept

Solution regions follow nbgrader's markers, `### BEGIN SOLUTION` / `### END SOLUTION`; hidden
tests `### BEGIN HIDDEN TESTS` / `### END HIDDEN TESTS`.
"""
from __future__ import annotations

import argparse
import ast
import copy
import dataclasses
import importlib
import os
import re
import sys
import tempfile
import textwrap
import time

import nbformat

from .exercises.base import Exercise

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOTEBOOKS = os.path.join(ROOT, "notebooks")
DEFAULT_OUT = os.path.join(ROOT, "editions")  # ignored by git (.gitignore)
SOLUTION = re.compile(r"^([ \t]*)### BEGIN SOLUTION[^\n]*\n(.*?)^[ \t]*### END SOLUTION[^\n]*\n?",
                      re.M | re.S)
HIDDEN = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS.*?^[ \t]*### END HIDDEN TESTS[^\n]*\n?",
                    re.M | re.S)
MODULE = re.compile(r"from ipu_tutorials\.classroom\.exercises import (\w+) as exercises")
CHECK = re.compile(r"\bexercises\.(\w+)\.check\(")
SCHEMA_VERSION = 3  # nbgrader's cell-metadata schema


@dataclasses.dataclass(frozen=True)
class Graded:
    """One exercise as a notebook holds it: its solution cell and the cell that checks it."""

    name: str  # the exercise's attribute in its module, e.g. "balance_bert"
    exercise: Exercise
    solution_cell: int
    check_cell: int

    @property
    def points(self) -> int:
        return 2 if self.exercise.writes_code else 1


def exercises_of(nb: nbformat.NotebookNode) -> list[Graded]:
    """Each solution cell of the lesson, paired with the next cell that calls a check."""
    module = next((m.group(1) for c in nb.cells if (m := MODULE.search(c.source))), None)
    if module is None:
        return []
    exercises = importlib.import_module(f"ipu_tutorials.classroom.exercises.{module}")
    graded = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or not SOLUTION.search(cell.source):
            continue
        check = next(i for i in range(index + 1, len(nb.cells))
                     if nb.cells[i].cell_type == "code" and CHECK.search(nb.cells[i].source))
        name = CHECK.search(nb.cells[check].source).group(1)
        graded.append(Graded(name, getattr(exercises, name), index, check))
    return graded


def bound_names(code: str) -> list[str]:
    """The names a solution region binds at its top level, in order (assignments, defs)."""
    names: list[str] = []
    for statement in ast.parse(textwrap.dedent(code)).body:
        if isinstance(statement, (ast.FunctionDef, ast.ClassDef)):
            names.append(statement.name)
        for target in getattr(statement, "targets", [getattr(statement, "target", None)]):
            elements = target.elts if isinstance(target, ast.Tuple) else [target]
            names += [t.id for t in elements if isinstance(t, ast.Name)]
    return list(dict.fromkeys(names))


def starting_code(graded: Graded, region: str) -> str:
    """What the learner's cell holds instead of the solution: the exercise's starting code, or
    `name = ...` for each name the solution binds (the check then asks for an answer)."""
    if graded.exercise.starting_code:
        return graded.exercise.starting_code.strip("\n") + "\n"
    return "".join(f"{name} = ...  # your answer\n" for name in bound_names(region))


def strip_solutions(source: str, graded: Graded) -> str:
    """The cell with each solution region replaced by the starting code, indentation kept."""
    def replace(match: re.Match) -> str:
        indent = match.group(1)
        stub = starting_code(graded, match.group(2))
        return "".join(indent + line if line.strip() else line
                       for line in stub.splitlines(keepends=True))
    return SOLUTION.sub(replace, source)


def nbgrader_metadata(grade_id: str, solution: bool, points: int = 0) -> dict:
    """nbgrader's cell metadata: an answer cell (solution) or a locked, graded test cell."""
    meta = {"grade": not solution, "grade_id": grade_id, "locked": not solution,
            "schema_version": SCHEMA_VERSION, "solution": solution}
    if not solution:
        meta["points"] = points
    return meta


def hidden_test(graded: Graded, check_source: str) -> str:
    """The check cell with a hidden test first: nbgrader's autograder scores a cell by whether
    it raises, and a check returns "Not yet" rather than raising."""
    call = CHECK.search(check_source)
    expression = check_source[call.start():].strip().splitlines()[0]
    return (f"### BEGIN HIDDEN TESTS\n_feedback = {expression}\n"
            f"assert _feedback.correct, repr(_feedback)\n### END HIDDEN TESTS\n{check_source}")


def instructor_edition(nb: nbformat.NotebookNode, lesson: str) -> nbformat.NotebookNode:
    """The stored notebook with nbgrader metadata on every exercise and its hidden tests."""
    nb = copy.deepcopy(nb)
    for graded in exercises_of(nb):
        answer, check = nb.cells[graded.solution_cell], nb.cells[graded.check_cell]
        answer.metadata["nbgrader"] = nbgrader_metadata(f"{graded.name}-answer", solution=True)
        check.metadata["nbgrader"] = nbgrader_metadata(graded.name, False, graded.points)
        check.source = hidden_test(graded, check.source)
    nb.metadata.setdefault("ipu_tutorials", {})["edition"] = "instructor"
    return nb


def student_edition(instructor: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The instructor edition without solutions, hidden tests or the outputs that show them."""
    nb = copy.deepcopy(instructor)
    graded = exercises_of(nb)
    first = min((g.solution_cell for g in graded), default=len(nb.cells))
    for g in graded:
        cell = nb.cells[g.solution_cell]
        cell.source = strip_solutions(cell.source, g)
        cell.metadata.pop("jupyter", None)  # the starting code is not folded away
        tags = [t for t in cell.metadata.pop("tags", []) if t != "solution"]
        if tags:
            cell.metadata["tags"] = tags
    for index, cell in enumerate(nb.cells):
        cell.source = HIDDEN.sub("", cell.source)
        if cell.cell_type == "code" and index >= first:  # the exercises and what follows
            cell.outputs, cell.execution_count = [], None
        cell.metadata.pop("execution", None)
    nb.metadata["ipu_tutorials"]["edition"] = "student"
    return nb


def lessons(names: list[str]) -> list[str]:
    """The stored notebooks' names matching `names` (prefixes; all when empty)."""
    stored = sorted(f[:-6] for f in os.listdir(NOTEBOOKS) if f.endswith(".ipynb"))
    chosen = [s for s in stored if not names or any(s.startswith(n) for n in names)]
    unknown = [n for n in names if not any(s.startswith(n) for s in stored)]
    if unknown:
        raise SystemExit(f"no stored notebook named {', '.join(unknown)}; known: "
                         f"{', '.join(stored)}")
    return chosen


def write_atomically(nb: nbformat.NotebookNode, path: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".ipynb")
    with os.fdopen(handle, "w", encoding="utf-8") as f:
        nbformat.write(nb, f)
    os.replace(temporary, path)


def build(names: list[str], out: str = DEFAULT_OUT) -> list[str]:
    """Write both editions of each lesson under `out`; returns the paths written."""
    written = []
    for lesson in lessons(names):
        stored = nbformat.read(os.path.join(NOTEBOOKS, f"{lesson}.ipynb"), as_version=4)
        instructor = instructor_edition(stored, lesson)
        for folder, nb in (("source", instructor), ("release", student_edition(instructor))):
            path = os.path.join(out, folder, lesson, f"{lesson}.ipynb")
            write_atomically(nb, path)
            written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="lessons (name prefixes; default: all)")
    parser.add_argument("--out", default=DEFAULT_OUT, help="course directory (default: editions/)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    written = build(args.names, args.out)
    print(f"{len(written) // 2} lessons: instructor editions in {args.out}/source, student "
          f"editions in {args.out}/release ({time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
