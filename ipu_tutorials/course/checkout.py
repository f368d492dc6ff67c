"""The course's checkout, which every authoring tool is given: the folder holding walkthroughs/,
notebooks/, static/ and pyproject.toml.

No tool finds it from where the package lies: an installed wheel ships none of these folders,
so the command line's `--root DIR` (the current directory by default) names it, and a folder a
command needs but the checkout lacks is one line (`CourseError`), never a traceback.
"""
from __future__ import annotations

import dataclasses
import os

FOLDERS = ("walkthroughs", "notebooks", "static")


class CourseError(ValueError):
    """A course command's bad input (no such folder, no such lesson): one line for its user."""


@dataclasses.dataclass(frozen=True)
class Checkout:
    """Where a checkout's folders are: each under `root` unless given (a test points one
    elsewhere, say its walkthroughs at a temporary copy)."""

    root: str
    walkthroughs: str = ""
    notebooks: str = ""
    static: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", os.path.abspath(self.root))
        for folder in FOLDERS:
            if not getattr(self, folder):
                object.__setattr__(self, folder, os.path.join(self.root, folder))

    @property
    def pyproject(self) -> str:
        """The project's pyproject.toml (its [project.urls] names the repository)."""
        return os.path.join(self.root, "pyproject.toml")

    def need(self, *names: str) -> "Checkout":
        """The checkout itself, once each of `names` (folders, or "pyproject") is there.

        Raises:
            CourseError: one is missing: run in a checkout of the course or pass --root DIR.
        """
        for name in names:
            path = self.pyproject if name == "pyproject" else getattr(self, name)
            missing = not (os.path.isfile(path) if name == "pyproject" else os.path.isdir(path))
            if missing:
                shown = os.path.basename(path) + ("" if name == "pyproject" else "/")
                raise CourseError(f"no {shown} in {os.path.dirname(path)}: run it in a checkout "
                                  f"of the course or pass --root DIR")
        return self


def choose(names: list[str], available: list[str], what: str) -> list[str]:
    """The available lessons whose names start with one of `names` (every one when none is
    named), in the checkout's order, each once.

    Raises:
        CourseError: a name matches none of them; the line names each such and the known ones.
    """
    unknown = [n for n in names if not any(a.startswith(n) for a in available)]
    if unknown:
        raise CourseError(f"no {what} named {', '.join(unknown)}; known: {', '.join(available)}")
    return [a for a in available if not names or any(a.startswith(n) for n in names)]
