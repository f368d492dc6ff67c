"""`ipu-course`, or `python build_notebooks.py` in a checkout: the course's authoring tools
behind one command line.

    ipu-course [build] [NAMES] [--check]     execute walkthroughs into notebooks/ and static/;
                                             --check: run nothing, exit 1 if a notebook is stale
    ipu-course editions [NAMES] [--out DIR]  the student and instructor editions (nbgrader)
    ipu-course html DIR [NAMES]              the stored notebooks as offline HTML pages
    ipu-course times [NAMES]                 each lesson's estimated study time
    ipu-course diagrams                      the conceptual diagrams, static/diagram_*.png
    ipu-course pages [--check]               the docs pages' generated parts (course/pages.py)
    ipu-course grade SUBMISSIONS [--course DIR] [--out DIR]   grade a class

`build` is the default: a first argument that names no command starts the build's arguments
(`ipu-course 04`, `ipu-course --check`). Every command but `grade` works on a checkout of the
course, the folder holding walkthroughs/, notebooks/, static/, docs/ and pyproject.toml:
`--root DIR`, by default the current directory (`build_notebooks.py`: the checkout it lies
in). NAMES are lesson names or their prefixes (`04`, `04_pipelining`); none means every
lesson. A command imports its tools only when it runs, so `ipu-course --help` needs none of
the notebooks extra, and a command that needs an extra and finds it missing says which to
install. Every bad input is one line and exit code 2.
"""
from __future__ import annotations

import argparse
import difflib
import os
import sys
import time

from .checkout import Checkout, CourseError

PROG = "ipu-course"
DEFAULT = "build"
# What the notebooks extra installs that the tools import; a missing one is named with the extra.
NOTEBOOK_PACKAGES = {"nbformat", "nbclient", "jupytext", "nbconvert", "jupyter_client"}
INSTALL = 'pip install "ipu-tutorials[notebooks]"'
# `pages` draws the import graph with grimp, which only the test extra installs.
TEST_PACKAGES = {"grimp"}
INSTALL_TEST = 'pip install -e ".[test]"'


def build(checkout: Checkout, names: list[str], check: bool = False) -> int:
    """Execute the walkthroughs named into notebooks/ and their figures into static/; with
    `check`, run nothing and name each stored notebook out of date (1 if any is)."""
    checkout.need("walkthroughs", *(["notebooks"] if check else []), "pyproject")
    from .builder import build_lessons, check_lessons
    from .lessons import sources
    return (check_lessons if check else build_lessons)(sources(names, checkout), checkout)


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


def pages(checkout: Checkout, check: bool = False) -> int:
    """Rewrite the docs pages' generated parts that are out of date; with `check`, only name
    them (1 if any is)."""
    from . import pages as tool
    if check:
        stale = tool.stale(checkout)
        for page in stale:
            print(f"stale: {page}: run ipu-course pages", file=sys.stderr)
        return 1 if stale else 0
    for page in tool.write(checkout):
        print(page)
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


def parser(prog: str = PROG, default_root: str = "the current directory"
           ) -> argparse.ArgumentParser:
    """The command line: one subcommand per tool, each calling its function above with the
    parsed arguments and the checkout (`args.checkout`, set by `main`)."""
    top = argparse.ArgumentParser(
        prog=prog, description="the course's authoring tools: lessons, editions, pages, grading",
        epilog=f"{DEFAULT} is the default: `{prog} 04` builds lesson 4, `{prog} --check` checks "
               f"every lesson; `{prog} COMMAND --help` shows a command's arguments")
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    root = argparse.ArgumentParser(add_help=False)
    root.add_argument("--root", metavar="DIR",
                      help=f"the course's checkout (default: {default_root})")
    names = argparse.ArgumentParser(add_help=False)
    names.add_argument("names", nargs="*", metavar="NAMES", help="lessons (default: all)")

    def command(name: str, run, summary: str, *parents) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=summary, description=summary, parents=[root, *parents])
        sub.set_defaults(run=run)
        return sub

    sub = command("build", lambda a: build(a.checkout, a.names, a.check),
                  "execute walkthroughs into notebooks/ and their figures into static/ (the "
                  "default command)", names)
    sub.add_argument("--check", action="store_true",
                     help="run nothing: exit 1, naming each, if a stored notebook is stale")
    sub = command("editions", lambda a: editions(a.checkout, a.names, a.out),
                  "write the student and instructor editions (nbgrader's course directory)", names)
    sub.add_argument("--out", metavar="DIR", help="the course directory (default: ROOT/editions)")
    sub = command("html", lambda a: html(a.checkout, a.directory, a.names),
                  "export the stored notebooks to HTML pages that work offline")
    sub.add_argument("directory", metavar="DIR", help="where the pages go")
    sub.add_argument("names", nargs="*", metavar="NAMES", help="lessons (default: all)")
    command("times", lambda a: times(a.checkout, a.names),
            "print each lesson's estimated study time", names)
    command("diagrams", lambda a: diagrams(a.checkout),
            "draw the conceptual diagrams into static/diagram_*.png")
    sub = command("pages", lambda a: pages(a.checkout, a.check),
                  "rewrite the generated parts of docs/architecture.md and docs/differences.md")
    sub.add_argument("--check", action="store_true",
                     help="write nothing: exit 1, naming each, if a page is out of date")
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


def with_default_command(argv: list[str], top: argparse.ArgumentParser) -> list[str]:
    """`argv` with `build` put first when its first argument names no command and asks no help,
    so `04` and `--check` are the build's arguments."""
    commands = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction)).choices
    if argv and (argv[0] in commands or argv[0] in ("-h", "--help")):
        return argv
    near = difflib.get_close_matches(argv[0], commands, n=1) if argv else []
    if near:  # `edition`: a mistyped command, not a lesson
        top.error(f"no command {argv[0]!r}; did you mean {near[0]!r}? (commands: "
                  f"{', '.join(commands)})")
    return [DEFAULT, *argv]


def main(argv: list[str] | None = None, prog: str = PROG, checkout: Checkout | None = None) -> int:
    """Run one command; its exit code (2 with one line on stderr for a bad input).

    `prog` names the command in messages; `checkout` is the one used without `--root` (the
    current directory when None; `build_notebooks.py` gives the checkout it lies in)."""
    top = parser(prog, checkout.root if checkout else "the current directory")
    args = top.parse_args(with_default_command(sys.argv[1:] if argv is None else argv, top))
    root = getattr(args, "root", None)
    args.checkout = Checkout(root) if root else checkout or Checkout(".")
    try:
        return args.run(args)
    except BrokenPipeError:  # `ipu-course times | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except CourseError as error:
        print(f"{prog}: {error}", file=sys.stderr)
    except ModuleNotFoundError as error:
        package = (error.name or "").split(".")[0]
        if package not in NOTEBOOK_PACKAGES | TEST_PACKAGES:
            raise
        extra, install = (("notebooks", INSTALL) if package in NOTEBOOK_PACKAGES
                          else ("test", INSTALL_TEST))
        print(f"{prog} {args.command}: {error.name} is missing, which the {extra} extra "
              f"installs: {install}", file=sys.stderr)
    return 2
