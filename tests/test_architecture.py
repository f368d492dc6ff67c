"""docs/architecture.md's floors are drawn from the package's real imports (issue 37, item 5).

A room is a subpackage of `ipu_tutorials` (`poptorch/`) or a module lying loose in it
(`poprun.py`). A room's floor is one above the highest room it imports, so every import runs
down the picture; the ground floor imports no other room. grimp (import-linter's graph
library) reads the imports, those under `if TYPE_CHECKING:` left out since they never run.

`python tests/test_architecture.py` prints the block; `--write` puts it into the page between
its `<!-- imports:begin -->` and `<!-- imports:end -->` markers.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

PACKAGE = "ipu_tutorials"
PAGE = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"
BEGIN, END = "<!-- imports:begin -->", "<!-- imports:end -->"


def room_imports() -> dict[str, set[str]]:
    """Each room, and the other rooms its modules import."""
    grimp = pytest.importorskip("grimp", reason="the test extra installs grimp")
    graph = grimp.build_graph(PACKAGE, exclude_type_checking_imports=True, cache_dir=None)
    rooms: dict[str, set[str]] = {}
    for module in graph.modules:
        if module == PACKAGE:
            continue  # the package's own __init__ re-exports; it is no room
        room = _room(module)
        imported = {_room(m) for m in graph.find_modules_directly_imported_by(module)}
        rooms.setdefault(room, set()).update(imported - {room, PACKAGE})
    return rooms


def _room(module: str) -> str:
    """`poptorch/` for any module in that subpackage, `poprun.py` for a loose module."""
    if module == PACKAGE:
        return PACKAGE
    top = f"{PACKAGE}.{module.split('.')[1]}"
    spec = importlib.util.find_spec(top)
    name = top.rsplit(".", 1)[1]
    return f"{name}/" if spec.submodule_search_locations is not None else f"{name}.py"


def floors(rooms: dict[str, set[str]]) -> dict[str, int]:
    """Each room's floor: 0 for a room importing none, else one above its highest import."""
    found: dict[str, int] = {}

    def floor(room: str, path: tuple[str, ...] = ()) -> int:
        if room in path:  # tests/test_layout.py refuses circles; say which, should one appear
            raise ValueError(f"rooms import each other: {' -> '.join(path + (room,))}")
        if room not in found:
            found[room] = 1 + max((floor(r, path + (room,)) for r in rooms[room]), default=-1)
        return found[room]

    for room in rooms:
        floor(room)
    return found


def diagram() -> str:
    """The page's block: the floors, top first, and what each room imports."""
    rooms = room_imports()
    levels = floors(rooms)
    lines = ["```text"]
    for level in range(max(levels.values()), -1, -1):
        names = sorted((r for r, f in levels.items() if f == level), key=_packages_first)
        lines.append(f"floor {level}  {', '.join(names)}")
    lines += ["```", "", "| room | imports |", "| --- | --- |"]
    for room in sorted(rooms, key=lambda r: (-levels[r], _packages_first(r))):
        imported = ", ".join(f"`{r}`" for r in sorted(rooms[room], key=_packages_first))
        lines.append(f"| `{room}` | {imported or 'no other room'} |")
    return "\n".join(lines)


def _packages_first(room: str) -> tuple[bool, str]:
    return room.endswith(".py"), room


def page_block() -> str:
    text = PAGE.read_text(encoding="utf-8")
    assert BEGIN in text and END in text, f"{PAGE} lost its {BEGIN} ... {END} markers"
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip()


def test_the_pages_floors_are_the_imports_floors():
    assert page_block() == diagram(), (
        "docs/architecture.md's floors no longer match the imports: run "
        "`python tests/test_architecture.py --write` and check the prose around them")


def test_a_room_sits_above_every_room_it_imports():
    rooms = {"a/": {"b/", "c.py"}, "b/": {"c.py"}, "c.py": set()}
    assert floors(rooms) == {"a/": 2, "b/": 1, "c.py": 0}
    with pytest.raises(ValueError, match="a/ -> b/ -> a/"):
        floors({"a/": {"b/"}, "b/": {"a/"}})


def test_the_facade_is_above_the_simulator_and_the_integrations_above_the_facade():
    levels = floors(room_imports())
    assert levels["simulator/"] < levels["poptorch/"]
    for integration in ("lightning/", "optimum/", "distributed/"):
        assert levels[integration] > levels["poptorch/"], integration


if __name__ == "__main__":
    block = diagram()
    if "--write" in sys.argv[1:]:
        head, rest = PAGE.read_text(encoding="utf-8").split(BEGIN, 1)
        PAGE.write_text(f"{head}{BEGIN}\n{block}\n{END}{rest.split(END, 1)[1]}", encoding="utf-8")
    print(block)
