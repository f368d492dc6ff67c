"""Build the lessons: each walkthrough executed into its stored notebook and its figures, or
checked against the notebook stored from it.

Every lesson's code is checked before any runs (a `# show:` line naming nothing, a copy of the
package's code), one line each; then each lesson is read (course/lessons.py), executed into
the form JupyterLab saves (course/notebook_form.py), its figures described and written
(course/figures.py) and the notebook stored in notebooks/.
"""
from __future__ import annotations

import os
import sys
import time

import nbformat
from tqdm import tqdm

from . import notebook_form
from .checkout import Checkout
from .figures import describe_figures, write_figures
from .lessons import code_errors, name_of, read_source, stale


def build(path: str, checkout: Checkout) -> float:
    """Execute one walkthrough into notebooks/<name>.ipynb and static/<name>_<n>.png; the seconds it took."""
    name = name_of(path)
    started = time.perf_counter()
    executed = notebook_form.execute(read_source(path, checkout), checkout)
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
    for path in tqdm(paths, desc="Building lessons", unit="notebook"):
        seconds = build(path, checkout)
        tqdm.write(f"{os.path.basename(path)}: executed in {seconds:.1f} s")
    return 0


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
