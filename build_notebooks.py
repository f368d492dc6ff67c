"""Build the lessons: walkthroughs/*.py -> executed notebooks/*.ipynb and their static/ figures.

    python build_notebooks.py                 # build every lesson
    python build_notebooks.py 04_pipelining   # build some (names or paths)
    python build_notebooks.py --check         # fail if a notebook is stale against its source
    python build_notebooks.py --student DIR   # only write the classroom editions (not re-run)
    python build_notebooks.py --html DIR      # export the built notebooks to HTML that works offline
    python build_notebooks.py --times         # each lesson's estimated study time, for docs/course.md
    python build_notebooks.py --diagrams      # the conceptual diagrams, static/diagram_*.png

The course's authoring tools live in ipu_tutorials/course/, behind the `ipu-course` command
(`ipu-course build`, `check`, `editions`, `html`, `times`, `diagrams`, `grade`); this script
runs them on the checkout it lies in.

Sources are jupytext "percent" files. A code line `# show: ipu_tutorials.module.Name` shows the
package's own class or function there (ipu_tutorials/course/shown_code.py), so lesson code
the package also needs is written once; `--check` names a notebook that shows an older version,
and the build refuses a walkthrough that copies the package's code. A notebook is the learner's
version of its lesson: a setup cell after the title (installs the package where it is missing),
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

import argparse
import os
import sys

from ipu_tutorials.course import cli
from ipu_tutorials.course.checkout import Checkout, CourseError

ROOT = os.path.dirname(os.path.abspath(__file__))
SOURCES, NOTEBOOKS, STATIC = (os.path.join(ROOT, d) for d in ("walkthroughs", "notebooks", "static"))


def checkout() -> Checkout:
    """This checkout (read when a command runs, so a test may point a folder elsewhere)."""
    return Checkout(ROOT, SOURCES, NOTEBOOKS, STATIC)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="lessons to build (default: all)")
    parser.add_argument("--check", action="store_true",
                        help="only check that every notebook is current; exit 1 if not")
    parser.add_argument("--student", metavar="DIR",
                        help="only write the student and instructor editions of the stored "
                             "notebooks into DIR (see ipu_tutorials/course/editions.py)")
    parser.add_argument("--html", metavar="DIR",
                        help="only export the built notebooks to offline HTML pages in DIR")
    parser.add_argument("--times", action="store_true",
                        help="only print each lesson's estimated study time")
    parser.add_argument("--diagrams", action="store_true",
                        help="only draw the conceptual diagrams into static/diagram_*.png")
    args = parser.parse_args(argv)
    course = checkout()
    try:
        if args.diagrams:
            return cli.diagrams(course)
        if args.times:
            return cli.times(course, args.names)
        if args.student:
            return cli.editions(course, args.names, args.student)
        if args.html:
            return cli.html(course, args.html, args.names)
        return (cli.check if args.check else cli.build)(course, args.names)
    except CourseError as error:
        print(f"build_notebooks.py: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
