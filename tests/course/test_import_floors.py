"""The floors of docs/architecture.md: a room sits one above the highest room it imports, a
circle is named, and a module left at an old name is no room but points where its module went."""
from pathlib import Path

import pytest

from ipu_tutorials.course.import_floors import ImportGraph, floors, old_names, room_imports

PACKAGE = Path(__file__).resolve().parents[2] / "ipu_tutorials"


def test_a_room_sits_above_every_room_it_imports():
    rooms = {"a/": {"b/", "c.py"}, "b/": {"c.py"}, "c.py": set()}
    assert floors(rooms) == {"a/": 2, "b/": 1, "c.py": 0}
    with pytest.raises(ValueError, match="a/ -> b/ -> a/"):
        floors({"a/": {"b/"}, "b/": {"a/"}})


def test_an_old_name_is_no_room_and_points_where_its_module_went():
    pytest.importorskip("grimp", reason="the test extra installs grimp")
    graph = ImportGraph(PACKAGE)
    moved = old_names(graph)
    assert moved == {"popdist.py": "distributed/popdist/",  # PopTorch's import swap, and no other
                     "poprun.py": "distributed/poprun.py"}  # (import_floors.py names the pattern)
    assert "popdist.py" not in room_imports(graph)
