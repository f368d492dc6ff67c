"""`ipu-course`: the course's authoring tools behind one command line.

    ipu-course build [NAMES]                 execute walkthroughs into notebooks/ and static/
    ipu-course check [NAMES]                 exit 1 if a stored notebook is stale
    ipu-course editions [NAMES] [--out DIR]  the student and instructor editions (nbgrader)
    ipu-course html DIR [NAMES]              the stored notebooks as offline HTML pages
    ipu-course times [NAMES]                 each lesson's estimated study time
    ipu-course diagrams                      the conceptual diagrams, static/diagram_*.png
    ipu-course grade SUBMISSIONS [--course DIR] [--out DIR]   grade a class

Every command but `grade` works on a checkout of the course, the folder holding walkthroughs/,
notebooks/, static/ and pyproject.toml: `--root DIR`, the current directory by default. NAMES
are lesson names or their prefixes (`04`, `04_pipelining`); none means every lesson. A command
imports its tools only when it runs, so `ipu-course --help` needs none of the notebooks extra,
and a command that needs it and finds it missing says which to install. Every bad input is one
line and exit code 2. `python build_notebooks.py` in a checkout runs the same tools.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

from .checkout import Checkout, CourseError

PROG = "ipu-course"
# What the notebooks extra installs that the tools import; a missing one is named with the extra.
NOTEBOOK_PACKAGES = {"nbformat", "nbclient", "jupytext", "nbconvert", "jupyter_client"}
INSTALL = 'pip install "ipu-tutorials[notebooks]"'


def build(checkout: Checkout, names: list[str]) -> int:
    """Execute the walkthroughs named into notebooks/ and their figures into static/."""
    checkout.need("walkthroughs", "pyproject")
    from .builder import build_lessons
    from .lessons import sources
    return build_lessons(sources(names, checkout), checkout)


def check(checkout: Checkout, names: list[str]) -> int:
    """Name each stored notebook out of date with its walkthrough; 1 if any is."""
    checkout.need("walkthroughs", "notebooks", "pyproject")
    from .builder import check_lessons
    from .lessons import sources
    return check_lessons(sources(names, checkout), checkout)


def times(checkout: Checkout, names: list[str]) -> int:
    """Print each lesson's estimated study time, as docs/course.md and the README list it."""
    checkout.need("walkthroughs")
    from .lessons import lesson_heading, sources, study_minutes
    for path in sources(names, checkout):
        number, title = lesson_heading(path)
        print(f"{number}. {title}: {study_minutes(path)} min")
    return 0


def editions(checkout: Checkout, names: list[str], out: str | None) -> int:
    """Write the student and instructor editions of the stored notebooks into `out`
    (the checkout's editions/ by default), as nbgrader's course directory."""
    checkout.need("notebooks")
    from . import editions as tool
    out = out or os.path.join(checkout.root, tool.OUT)
    started = time.perf_counter()
    written = tool.build(names, out, checkout)
    print(f"{len(written) // 2} lessons: instructor editions in {os.path.join(out, 'source')}, "
          f"student editions in {os.path.join(out, 'release')}, nbgrader's settings in "
          f"{os.path.join(out, 'nbgrader_config.py')} ({time.perf_counter() - started:.1f} s)")
    return 0


def html(checkout: Checkout, directory: str, names: list[str]) -> int:
    """Export the stored notebooks named to offline HTML pages in `directory`."""
    checkout.need("notebooks", "static")
    from .editions import lessons
    from .figures import write_html
    for name in lessons(names, checkout):
        print(write_html(name, directory, checkout))
    return 0


def diagrams(checkout: Checkout) -> int:
    """Draw the conceptual diagrams into the checkout's static/."""
    checkout.need("static")
    from .diagrams import write_diagrams
    print("\n".join(write_diagrams(checkout.static)))
    return 0


def grade(submissions: str, course: str | None, out: str | None, cell_timeout: int | None,
          timeout: int | None) -> int:
    """Grade every notebook under `submissions` against the course directory's instructor
    editions; write the gradebook and its summary page."""
    if not os.path.isdir(submissions):
        raise CourseError(f"{submissions} is not a folder")
    course = course or os.path.dirname(os.path.abspath(submissions))
    if not os.path.isdir(os.path.join(course, "source")):
        raise CourseError(f"{course} is not a course directory (no source/ in it): write one with "
                          f"ipu-course editions --out DIR, or pass --course DIR")
    from . import grading
    out = out or os.path.join(course, "grades")
    scores = grading.grade(submissions, out, course, cell_timeout or grading.CELL_TIMEOUT,
                           timeout or grading.NOTEBOOK_TIMEOUT)  # None: the grader's own limits
    print(f"{len({s.learner for s in scores})} learners, {len(scores)} scores: "
          f"{os.path.join(out, 'gradebook.csv')} and {os.path.join(out, 'summary.html')}")
    return 0


def seconds(text: str) -> int:
    """A time limit as the command line gives it: a whole number of seconds, at least 1."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of seconds (1 or more)")
    return int(text)


def parser() -> argparse.ArgumentParser:
    """The command line: one subcommand per tool, each calling its function above."""
    top = argparse.ArgumentParser(
        prog=PROG, description="the course's authoring tools: lessons, editions, grading")
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    root = argparse.ArgumentParser(add_help=False)
    root.add_argument("--root", default=".", metavar="DIR",
                      help="the course's checkout (default: the current directory)")
    names = argparse.ArgumentParser(add_help=False)
    names.add_argument("names", nargs="*", metavar="NAMES", help="lessons (default: all)")

    def command(name: str, run, summary: str, *parents) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=summary, description=summary, parents=[root, *parents])
        sub.set_defaults(run=run)
        return sub

    command("build", lambda a: build(Checkout(a.root), a.names),
            "execute walkthroughs into notebooks/ and their figures into static/", names)
    command("check", lambda a: check(Checkout(a.root), a.names),
            "exit 1 if a stored notebook is stale against its walkthrough", names)
    sub = command("editions", lambda a: editions(Checkout(a.root), a.names, a.out),
                  "write the student and instructor editions (nbgrader's course directory)", names)
    sub.add_argument("--out", metavar="DIR", help="the course directory (default: ROOT/editions)")
    sub = command("html", lambda a: html(Checkout(a.root), a.directory, a.names),
                  "export the stored notebooks to HTML pages that work offline")
    sub.add_argument("directory", metavar="DIR", help="where the pages go")
    sub.add_argument("names", nargs="*", metavar="NAMES", help="lessons (default: all)")
    command("times", lambda a: times(Checkout(a.root), a.names),
            "print each lesson's estimated study time", names)
    command("diagrams", lambda a: diagrams(Checkout(a.root)),
            "draw the conceptual diagrams into static/diagram_*.png")
    sub = commands.add_parser("grade", help="grade a class's submitted notebooks",
                              description="grade a class's submitted notebooks")
    sub.set_defaults(run=lambda a: grade(a.submissions, a.course, a.out, a.cell_timeout, a.timeout))
    sub.add_argument("submissions", metavar="SUBMISSIONS", help="folder of submitted notebooks")
    sub.add_argument("--course", metavar="DIR", help="the course directory the editions command "
                                                     "wrote (default: the folder holding SUBMISSIONS)")
    sub.add_argument("--out", metavar="DIR", help="where the gradebook goes (default: COURSE/grades)")
    sub.add_argument("--cell-timeout", type=seconds, metavar="S",
                     help="seconds per cell (default: the lessons' build's limit)")
    sub.add_argument("--timeout", type=seconds, metavar="S",
                     help="seconds per notebook (default: half an hour)")
    return top


def main(argv: list[str] | None = None) -> int:
    """Run one command; its exit code (2 with one line on stderr for a bad input)."""
    args = parser().parse_args(argv)
    try:
        return args.run(args)
    except BrokenPipeError:  # `ipu-course times | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except CourseError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
    except ModuleNotFoundError as error:
        if (error.name or "").split(".")[0] not in NOTEBOOK_PACKAGES:
            raise
        print(f"{PROG} {args.command}: {error.name} is missing, which the notebooks extra "
              f"installs: {INSTALL}", file=sys.stderr)
    return 2
