"""docs/architecture.md's floors are the package's real imports (issue 37, item 5): the page
holds the picture `ipu-course pages` draws from them now (ipu_tutorials/course/import_floors.py),
and the picture puts the facade above the simulator and the integrations above the facade."""
from __future__ import annotations

from pathlib import Path

import pytest

from ipu_tutorials.course import pages
from ipu_tutorials.course.checkout import Checkout
from ipu_tutorials.course.import_floors import ImportGraph, floors, room_imports

pytest.importorskip("grimp", reason="the test extra installs grimp")
ROOT = Path(__file__).resolve().parents[1]
CHECKOUT = Checkout(str(ROOT))


def test_the_pages_floors_are_the_imports_floors():
    block = next(b for b in pages.BLOCKS if b.page == "docs/architecture.md")
    assert block.written(CHECKOUT) == block.make(CHECKOUT), (
        "docs/architecture.md's floors no longer match the imports: run `ipu-course pages` "
        "and check the prose around them")


def test_the_facade_is_above_the_simulator_and_the_integrations_above_the_facade():
    levels = floors(room_imports(ImportGraph(ROOT / "ipu_tutorials")))
    assert levels["simulator/"] < levels["poptorch/"]
    for integration in ("lightning/", "optimum/", "distributed/"):
        assert levels[integration] > levels["poptorch/"], integration
