"""docs/architecture.md's floors are drawn from the package's real imports (issue 37, item 5).

A room is a subpackage of `ipu_tutorials` (`poptorch/`) or a module lying loose in it
(`errors.py`). A room's floor is one above the highest room it imports, so every import runs
down the picture; the ground floor imports no other room. grimp (import-linter's graph
library) reads the imports, those under `if TYPE_CHECKING:` left out since they never run.
A module left at the old name of one that moved (`popdist.py`, which hands its name to
`distributed/popdist/`) is no room: the picture lists it under "old names" with where it points.

`python tests/test_architecture.py` prints the block; `--write` puts it into the page between
its `<!-- imports:begin -->` and `<!-- imports:end -->` markers.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

PACKAGE = "ipu_tutorials"
ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "architecture.md"
BEGIN, END = "<!-- imports:begin -->", "<!-- imports:end -->"


def _graph():
    grimp = pytest.importorskip("grimp", reason="the test extra installs grimp")
    return grimp.build_graph(PACKAGE, exclude_type_checking_imports=True, cache_dir=None)


def _path(module: str) -> Path:
    """The file or folder a module's name points at in the source tree."""
    folder = ROOT.joinpath(*module.split("."))
    return folder if folder.is_dir() else folder.with_suffix(".py")


def _is_old_name(module: str) -> bool:
    """A module that only hands its name to a moved one (`sys.modules[__name__] = ...`)."""
    path = _path(module)
    return path.suffix == ".py" and "sys.modules[__name__] = " in path.read_text(encoding="utf-8")


def _shown(module: str) -> str:
    """`distributed/popdist/` for a package, `support/rendezvous.py` for a module."""
    path = _path(module).relative_to(ROOT / PACKAGE).as_posix()
    return f"{path}/" if _path(module).is_dir() else path


def old_names(graph=None) -> dict[str, str]:
    """Each module left at an old name, and the moved module it hands that name to."""
    graph = graph or _graph()
    return {_shown(m): _shown(_moved_to(graph, m))
            for m in graph.modules if m != PACKAGE and _is_old_name(m)}


def _moved_to(graph, old: str) -> str:
    """The module an old name hands its name to: of those it imports, the one of the same name
    (`classroom/editions.py` imports `course/editions.py`, and `course/cli.py` to run it)."""
    imported = graph.find_modules_directly_imported_by(old)
    same = [m for m in imported if m.rsplit(".", 1)[-1] == old.rsplit(".", 1)[-1]]
    return min(same or imported, key=len)


def room_imports(graph=None) -> dict[str, set[str]]:
    """Each room, and the other rooms its modules import."""
    graph = graph or _graph()
    rooms: dict[str, set[str]] = {}
    for module in graph.modules:
        if module == PACKAGE or _is_old_name(module):
            continue  # the package's own __init__ re-exports, an old name points elsewhere
        room = _room(module)
        imported = {_room(m) for m in graph.find_modules_directly_imported_by(module)}
        rooms.setdefault(room, set()).update(imported - {room, PACKAGE})
    return rooms


def _room(module: str) -> str:
    """`poptorch/` for any module in that subpackage, `errors.py` for a loose module."""
    if module == PACKAGE:
        return PACKAGE
    name = module.split(".")[1]
    return f"{name}/" if (ROOT / PACKAGE / name).is_dir() else f"{name}.py"


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
    graph = _graph()
    rooms = room_imports(graph)
    levels = floors(rooms)
    lines = ["```text"]
    for level in range(max(levels.values()), -1, -1):
        names = sorted((r for r, f in levels.items() if f == level), key=_packages_first)
        lines.append(f"floor {level}  {', '.join(names)}")
    moved = old_names(graph)
    if moved:
        lines.append("")
        lines += [f"old name  {old} -> {new}" for old, new in sorted(moved.items())]
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


def test_an_old_name_is_no_room_and_points_where_its_module_went():
    graph = _graph()
    assert old_names(graph) == {"popdist.py": "distributed/popdist/",  # PopTorch's import swap
                                "poprun.py": "distributed/poprun.py"}
    assert "popdist.py" not in room_imports(graph)


if __name__ == "__main__":
    block = diagram()
    if "--write" in sys.argv[1:]:
        head, rest = PAGE.read_text(encoding="utf-8").split(BEGIN, 1)
        PAGE.write_text(f"{head}{BEGIN}\n{block}\n{END}{rest.split(END, 1)[1]}", encoding="utf-8")
    print(block)
