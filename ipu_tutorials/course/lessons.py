"""The lessons as their walkthroughs write them: the learner's notebook read from a source, and
what is said about each lesson without running it (stale or not, its heading, its study time).

A walkthrough is a jupytext "percent" file in the checkout's walkthroughs/. Its learner's
notebook (`read_source`) has the lesson's title, a setup cell that installs the package where it
is missing, then the lesson with each `# show:` line replaced by the package's code
(course/shown_code.py) and each exercise's answer cell holding its starting code
(course/editions.py). `stale` says why a stored notebook no longer matches its source.
"""
from __future__ import annotations

import hashlib
import os
import re

import jupytext
import nbformat

from .checkout import Checkout, choose
from .editions import ANSWER, learner_edition
from .notebook_form import kernelspec
from .portable import travelling
from .shown_code import LessonCodeError, drift, expand, hand_copies, shown

# The study-time estimate of the course map (assumptions, not measurements): technical prose
# read at 120 words a minute, a minute to run and read each code cell, 8 minutes per exercise.
WORDS_PER_MINUTE, MINUTES_PER_CELL, MINUTES_PER_EXERCISE = 120, 1, 8
# The extra a lesson needs where it runs outside this repository, by what its code imports.
EXTRAS = {"huggingface": r"^\s*(from|import) (transformers|ipu_tutorials\.optimum)\b",
          "lightning": r"^\s*(from|import) (lightning|ipu_tutorials\.lightning)\b"}


def name_of(path: str) -> str:
    """A lesson's name from its walkthrough's path: walkthroughs/04_pipelining.py -> 04_pipelining."""
    return os.path.splitext(os.path.basename(path))[0]


def source_hash(path: str) -> str:
    """The walkthrough's SHA-256, which its notebook stores to tell when it was built from an older one."""
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def repository(checkout: Checkout) -> str:
    """The project's repository, as pyproject.toml's [project.urls] names it."""
    with open(checkout.pyproject, encoding="utf-8") as f:
        return re.search(r'^Repository = "([^"]+)"', f.read(), re.M).group(1)


def setup_cell(nb: nbformat.NotebookNode, checkout: Checkout) -> nbformat.NotebookNode:
    """The lesson's first code cell: outside this repository (Colab, Binder) it installs the
    package with the extras the lesson imports; where the package is installed it does nothing,
    silently and offline."""
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    extras = [extra for extra, pattern in EXTRAS.items() if re.search(pattern, code, re.M)]
    package = f"ipu-tutorials{'[' + ','.join(extras) + ']' if extras else ''}"
    cell = nbformat.v4.new_code_cell(
        "# Setup: install the course's package where it is missing (Colab, Binder); else do nothing.\n"
        "import importlib.util\n\n"
        'if importlib.util.find_spec("ipu_tutorials") is None:\n'
        f'    %pip install --quiet "{package} @ git+{repository(checkout)}"')
    cell.metadata["tags"] = ["setup"]
    return cell


def read_source(path: str, checkout: Checkout) -> nbformat.NotebookNode:
    """The walkthrough as the learner's unexecuted notebook: its title, the setup cell, then
    the lesson, each answer cell holding its exercise's starting code."""
    name = name_of(path)
    nb = jupytext.read(path, fmt="py:percent")
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = expand(cell.source, checkout.root)
        else:
            travelling(cell, checkout, repository(checkout))
    nb = learner_edition(nb)
    nb.cells.insert(1, setup_cell(nb, checkout))
    for index, cell in enumerate(nb.cells):
        # Stable cell ids (nbformat's are random), so a rebuild changes only what changed.
        cell.id = hashlib.sha256(f"{name}:{index}:{cell.source}".encode()).hexdigest()[:8]
    nb.metadata["kernelspec"] = kernelspec()
    nb.metadata["ipu_tutorials"] = {
        "source": f"walkthroughs/{name}.py", "source_sha256": source_hash(path),
        "generated": f"by build_notebooks.py: edit walkthroughs/{name}.py (and the exercises' "
                     f"starting code and solutions in ipu_tutorials/classroom/exercises/), "
                     f"then run `python build_notebooks.py {name}`"}
    nb.metadata.pop("jupytext", None)
    return nb


def code_errors(path: str, checkout: Checkout) -> list[str]:
    """What keeps the walkthrough's code from being written once: a `# show:` line naming
    nothing, or a definition that copies the package's instead of showing it."""
    name = name_of(path)
    try:
        read_source(path, checkout)
    except LessonCodeError as error:
        return [f"{name}: {error}"]
    with open(path, encoding="utf-8") as f:
        return hand_copies(name, f.read(), checkout.root)


def stale(path: str, checkout: Checkout) -> list[str]:
    """Why the built files of one walkthrough are out of date ([] when they are current)."""
    name = name_of(path)
    notebook = os.path.join(checkout.notebooks, f"{name}.ipynb")
    if not os.path.exists(notebook):
        return [f"{name}.ipynb is missing"]
    built = nbformat.read(notebook, as_version=4)
    problems = []
    if built.metadata.get("ipu_tutorials", {}).get("source_sha256") != source_hash(path):
        problems.append(f"{name}.ipynb was built from an older walkthroughs/{name}.py")
    def seen(cells):  # what a reader sees of each cell: its source, and its figures
        return [(c.cell_type, c.source, c.get("attachments")) for c in cells]

    expected, cells = seen(read_source(path, checkout).cells), seen(built.cells)
    if cells != expected:
        problems += drifted(path, [e[:2] for e in expected], [c[:2] for c in cells],
                            checkout) or [
            f"{name}.ipynb cells differ from walkthroughs/{name}.py (edited by hand?)"]
    if any(c.cell_type == "code" and c.execution_count is None and c.source.strip()
           for c in built.cells):
        problems.append(f"{name}.ipynb has unexecuted cells: nbval would check nothing there")
    return problems


def drifted(path: str, expected: list, cells: list, checkout: Checkout) -> list[str]:
    """A line for each cell that shows the package's code as it was when the notebook was
    built, naming the definition and its first changed line."""
    with open(path, encoding="utf-8") as f:
        names = shown(f.read())
    if not names or len(cells) != len(expected):
        return []
    lines = (drift(name_of(path), names, want, have, checkout.root)
             for (_, want), (_, have) in zip(expected, cells) if want != have)
    return [line for line in lines if line]


def lesson_heading(path: str) -> tuple[int, str]:
    """The lesson's number and title, from its "# Lesson N: Title" heading.

    Raises:
        ValueError: the walkthrough does not open with such a heading.
    """
    nb = jupytext.read(path, fmt="py:percent")
    match = re.search(r"^# Lesson (\d+): (.+)$", nb.cells[0].source, re.M)
    if not match:
        raise ValueError(f"{path} does not open with a '# Lesson N: Title' heading")
    return int(match.group(1)), match.group(2).strip()


def study_minutes(path: str) -> int:
    """How long a learner needs for the lesson, rounded up to 5 minutes: reading, running
    each cell and doing each exercise, at the rates WORDS_PER_MINUTE and the like assume."""
    nb = jupytext.read(path, fmt="py:percent")
    words = sum(len(re.sub(r"<!--.*?-->", "", c.source, flags=re.S).split())  # not the
                for c in nb.cells if c.cell_type == "markdown")  # invisible claim marks
    cells = sum(1 for c in nb.cells if c.cell_type == "code"
                and ANSWER not in c.metadata.get("tags", []))
    exercises = sum(len(re.findall(r"^### Exercise", c.source, re.M)) for c in nb.cells)
    minutes = words / WORDS_PER_MINUTE + cells * MINUTES_PER_CELL + exercises * MINUTES_PER_EXERCISE
    return 5 * -(-int(round(minutes)) // 5)


def sources(names: list[str], checkout: Checkout) -> list[str]:
    """The walkthroughs named (names or paths, matched by prefix; every one when none is
    named), in the checkout's order.

    Raises:
        CourseError: the checkout has no walkthroughs/, or a name matches no walkthrough.
    """
    folder = checkout.need("walkthroughs").walkthroughs
    known = sorted(name_of(f) for f in os.listdir(folder) if f.endswith(".py"))
    chosen = choose([name_of(name) for name in names], known, "walkthrough")
    return [os.path.join(folder, f"{name}.py") for name in chosen]
