"""The "Graph compilation" progress bar: animated in a terminal, one finished line in a notebook."""
from __future__ import annotations

import sys

from tqdm import tqdm

DESCRIPTION = "Graph compilation"
BAR_FORMAT = "{desc}: {percentage:3.0f}%|{bar:10}| {n_fmt}/{total_fmt}"


class NotebookLine:
    """Counts progress and prints the final bar once, to stdout, when closed.

    In a Jupyter kernel a redrawn tqdm bar arrives as carriage-return frames on stderr: the
    notebook shows a red box with an empty line after it, and every front end collapses the
    frames differently, so a saved notebook would change on its next save. Simulated compilation
    takes well under a second, so the finished bar alone loses nothing.
    """

    def __init__(self, total: int = 100):
        self.n, self.total, self.closed = 0, total, False

    def update(self, n: int = 1) -> None:
        self.n += n

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            print(tqdm.format_meter(self.n, self.total, 0, prefix=DESCRIPTION,
                                    bar_format=BAR_FORMAT), flush=True)


def in_notebook() -> bool:
    """True inside a Jupyter kernel whose output goes to a front end, not to a terminal."""
    return "ipykernel" in sys.modules and type(sys.stdout).__module__.startswith("ipykernel")


def compilation_bar(show: bool):
    """The progress bar a compile() advances to 100 and closes."""
    if show and in_notebook():
        return NotebookLine()
    return tqdm(total=100, desc=DESCRIPTION, file=sys.stderr, mininterval=0,
                bar_format=BAR_FORMAT, disable=not show)
