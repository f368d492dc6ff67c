"""The docs pages' generated parts, each written from the code between its page's two markers.

    docs/architecture.md  <!-- imports:begin --> ... end -->  the floors (import_floors.py)
    docs/differences.md   <!-- extras:begin --> ... end -->   the simulator extras' table

`ipu-course pages` rewrites them; `ipu-course pages --check` and the tests
(tests/test_architecture.py, tests/peer/test_surface.py) only say which is out of date.
"""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Callable

from ..support import extras_registry
from ..support.atomic_io import write_text
from .checkout import Checkout, CourseError
from .import_floors import PACKAGE, floors_block


def extras_table() -> str:
    """docs/differences.md's table: every declared extra, why it is there, and the real way."""
    rows = ["| extra | why the simulator has it | the real way |", "| --- | --- | --- |"]
    rows += [f"| `{e.name}` | {e.why} | {e.real_way} |" for e in extras_registry.EXTRAS]
    return "\n".join(rows)


def imports_block(checkout: Checkout) -> str:
    """docs/architecture.md's floors, from the imports of the checkout's own package.

    Raises:
        CourseError: the `ipu_tutorials` Python imports is not the checkout's.
    """
    import ipu_tutorials
    imported = Path(ipu_tutorials.__file__).resolve().parent
    ours = Path(checkout.root, PACKAGE).resolve()
    if imported != ours:
        raise CourseError(f"Python imports {imported}, not {ours}: install the checkout "
                          f"(pip install -e .) or put it first on PYTHONPATH")
    return floors_block(ours)


@dataclasses.dataclass(frozen=True)
class Block:
    """A page's generated part: the page, its markers' name, and what writes the text."""
    page: str  # relative to the checkout's root
    marker: str
    make: Callable[[Checkout], str]

    @property
    def begin(self) -> str:
        return f"<!-- {self.marker}:begin -->"

    @property
    def end(self) -> str:
        return f"<!-- {self.marker}:end -->"

    def written(self, checkout: Checkout) -> str:
        """The text the page holds between the markers now.

        Raises:
            CourseError: the page or one of its markers is missing.
        """
        text = self._page_text(checkout)
        return text.split(self.begin, 1)[1].split(self.end, 1)[0].strip()

    def write(self, checkout: Checkout, block: str) -> None:
        head, rest = self._page_text(checkout).split(self.begin, 1)
        write_text(os.path.join(checkout.root, self.page),
                   f"{head}{self.begin}\n{block}\n{self.end}{rest.split(self.end, 1)[1]}")

    def _page_text(self, checkout: Checkout) -> str:
        path = os.path.join(checkout.root, self.page)
        if not os.path.isfile(path):
            raise CourseError(f"no {self.page} in {checkout.root}: run it in a checkout of the "
                              f"course or pass --root DIR")
        text = Path(path).read_text(encoding="utf-8")
        if self.begin not in text or self.end not in text:
            raise CourseError(f"{self.page} lost its {self.begin} ... {self.end} markers")
        return text


BLOCKS = (Block("docs/architecture.md", "imports", imports_block),
          Block("docs/differences.md", "extras", lambda _: extras_table()))


def stale(checkout: Checkout) -> list[str]:
    """The pages whose generated part differs from what the code writes now."""
    return [b.page for b in BLOCKS if b.written(checkout) != b.make(checkout)]


def write(checkout: Checkout) -> list[str]:
    """Rewrite each page whose generated part is out of date; the pages rewritten."""
    rewritten = []
    for block in BLOCKS:
        written = block.written(checkout)  # first: a checkout without the page is one line
        text = block.make(checkout)
        if written != text:
            block.write(checkout, text)
            rewritten.append(block.page)
    return rewritten
