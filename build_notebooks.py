"""Build the lessons: walkthroughs/*.py -> executed notebooks/*.ipynb and their static/ figures.

    python build_notebooks.py                 # build every lesson
    python build_notebooks.py 04_pipelining   # build some (names or their prefixes: 04)
    python build_notebooks.py --check         # fail if a notebook is stale against its source
    python build_notebooks.py --help          # the other commands: editions, html, times, ...

This script is the `ipu-course` command (ipu_tutorials/course/cli.py) run on the checkout it
lies in: `python build_notebooks.py ARGS` is `ipu-course ARGS --root THIS_FOLDER`, the same
commands and flags, `build` the default one.

Sources are jupytext "percent" files. A code line `# show: ipu_tutorials.module.Name` shows the
package's own class or function there (ipu_tutorials/course/shown_code.py), so lesson code
the package also needs is written once; `--check` names a notebook that shows an older
version, and the build refuses a walkthrough that copies the package's code. A notebook is the
learner's version of its lesson: a setup cell after the title (installs the package where it is missing),
and each exercise's answer cell holding its starting code (ipu_tutorials/course/editions.py),
so every check says "Not yet" until the learner answers; the instructor's edition, with the
solutions, is made from it by the editions tool. Each notebook is executed top to bottom with
nbclient (widget state stored, so explorers render when opened) and written with its outputs,
which nbval later compares against a fresh run; its figures are also written to static/ (the
README shows one). The course website (mkdocs.yml) renders the stored notebooks. Notebooks are
stored in the form JupyterLab saves them in (its kernel display name, no carriage-return
progress frames), so opening, trusting and saving one in JupyterLab leaves the repository
unchanged (ipu_tutorials/course/notebook_form.py).
"""
from __future__ import annotations

import os
import sys

from ipu_tutorials.course import cli
from ipu_tutorials.course.checkout import Checkout

ROOT = os.path.dirname(os.path.abspath(__file__))
SOURCES, NOTEBOOKS, STATIC = (os.path.join(ROOT, d) for d in ("walkthroughs", "notebooks", "static"))


def checkout() -> Checkout:
    """This checkout (read when a command runs, so a test may point a folder elsewhere)."""
    return Checkout(ROOT, SOURCES, NOTEBOOKS, STATIC)


def main(argv: list[str] | None = None) -> int:
    """`ipu-course ARGS` on this checkout; its exit code."""
    return cli.main(argv, prog="build_notebooks.py", checkout=checkout())


if __name__ == "__main__":
    sys.exit(main())
