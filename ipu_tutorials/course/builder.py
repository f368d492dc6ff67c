"""Build the lessons: each walkthrough executed into its stored notebook and its figures, or
checked against the notebook stored from it.

Every lesson's code is checked before any runs (a `# show:` line naming nothing, a copy of the
package's code), one line each; then each lesson is read (course/lessons.py), executed into
the form JupyterLab saves (course/notebook_form.py), its figures described and written
(course/figures.py) and the notebook stored in notebooks/. While it runs, the facades note
every simulator extra the lesson's own lines use (support/extras.py); a use on a line without
the `# simulator extra` marker refuses the lesson, so "only the import line changes" holds for
every unmarked line.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time

import nbformat
from tqdm import tqdm

from ..support import extras
from . import notebook_form
from .checkout import Checkout
from .figures import describe_figures, write_figures
from .lessons import code_errors, name_of, read_source, stale


class UnmarkedExtras(Exception):
    """A lesson's lines use simulator extras without saying so; args: one line per use."""


def execute_noting_extras(path: str, checkout: Checkout):
    """The walkthrough executed, and the extras its cells' lines used (support/extras.Use)."""
    with tempfile.TemporaryDirectory() as scratch:
        log = os.path.join(scratch, "extras.jsonl")
        executed = notebook_form.execute(read_source(path, checkout), checkout,
                                         env={**os.environ, extras.LOG_VARIABLE: log})
        return executed, extras.read_log(log)


def unmarked_extras(nb, uses, name: str) -> list[str]:
    """One line for each line of a cell that uses an extra without the marker."""
    sources = [cell.source for cell in nb.cells]
    problems = []
    for index, found in sorted(extras.uses_by_cell(uses, sources).items()):
        names = {}
        for use in found:
            names.setdefault(use.line, set()).add(use.extra)
        for line, code in extras.unmarked_lines(sources[index], names.keys()):
            used = ", ".join(sorted(names[line]))
            problems.append(f"{name}: `{code}` uses the simulator extra {used}: mark its line "
                            f"`{extras.MARKER}`")
    return problems


def build(path: str, checkout: Checkout) -> float:
    """Execute one walkthrough into notebooks/<name>.ipynb and static/<name>_<n>.png; the
    seconds it took. Raises UnmarkedExtras, writing nothing, when a line hides an extra."""
    name = name_of(path)
    started = time.perf_counter()
    executed, uses = execute_noting_extras(path, checkout)
    problems = unmarked_extras(executed, uses, name)
    if problems:
        raise UnmarkedExtras(*problems)
    nb = describe_figures(notebook_form.stable_widget_ids(executed, name), name)
    nbformat.write(nb, os.path.join(checkout.notebooks, f"{name}.ipynb"))
    write_figures(nb, name, checkout.static)
    return time.perf_counter() - started


def refused(paths: list[str], checkout: Checkout) -> bool:
    """Print a line for each walkthrough whose code is not written once; whether any was."""
    errors = [error for path in paths for error in code_errors(path, checkout)]
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    return bool(errors)


def build_lessons(paths: list[str], checkout: Checkout) -> int:
    """Build each walkthrough in turn (none when one's code is refused); the exit code."""
    if refused(paths, checkout):
        return 1
    os.makedirs(checkout.notebooks, exist_ok=True)
    status = 0
    for path in tqdm(paths, desc="Building lessons", unit="notebook"):
        try:
            seconds = build(path, checkout)
        except UnmarkedExtras as refusal:  # the other lessons still build
            for problem in refusal.args:
                tqdm.write(f"error: {problem}", file=sys.stderr)
            status = 1
            continue
        tqdm.write(f"{os.path.basename(path)}: executed in {seconds:.1f} s")
    return status


def check_lessons(paths: list[str], checkout: Checkout) -> int:
    """A line for each stored notebook out of date with its walkthrough; exit code 1 if any."""
    if refused(paths, checkout):
        return 1
    problems = [problem for path in paths for problem in stale(path, checkout)]
    for problem in problems:
        print(f"stale: {problem}", file=sys.stderr)
    if problems:
        print("Run `python build_notebooks.py` and commit the results.", file=sys.stderr)
    return 1 if problems else 0
