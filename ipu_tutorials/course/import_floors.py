"""docs/architecture.md's floors, drawn from the package's real imports.

A room is a subpackage of `ipu_tutorials` (`poptorch/`) or a module lying loose in it
(`errors.py`). A room's floor is one above the highest room it imports, so every import runs
down the picture; the ground floor imports no other room. grimp (import-linter's graph
library, in the test extra) reads the imports, those under `if TYPE_CHECKING:` left out since
they never run. A module left at the old name of one that moved (`popdist.py`, which hands its
name to `distributed/popdist/`) is no room: the picture lists it under "old names" with where
it points. `ipu-course pages` writes the picture into the page.
"""
from __future__ import annotations

import re
from pathlib import Path

PACKAGE = "ipu_tutorials"
# The line an old name is left as (tests/test_old_names.py looks for the same line).
HANDS_ITS_NAME_ON = re.compile(r"^sys\.modules\[__name__\] = ", re.MULTILINE)


class ImportGraph:
    """The package's imports as grimp reads them, and where each module's file lies."""

    def __init__(self, package_folder: Path):
        import grimp  # the test extra installs it; only `ipu-course pages` and its tests need it
        self.folder = Path(package_folder)
        self.grimp = grimp.build_graph(PACKAGE, exclude_type_checking_imports=True, cache_dir=None)

    @property
    def modules(self) -> set[str]:
        return self.grimp.modules

    def imported_by(self, module: str) -> set[str]:
        return self.grimp.find_modules_directly_imported_by(module)

    def path(self, module: str) -> Path:
        """The file or folder a module's name points at in the source tree."""
        folder = self.folder.joinpath(*module.split(".")[1:])
        return folder if folder.is_dir() else folder.with_suffix(".py")

    def is_old_name(self, module: str) -> bool:
        """A module that only hands its name to a moved one (its last line sets its own entry
        in sys.modules to that module)."""
        path = self.path(module)
        return path.suffix == ".py" and bool(HANDS_ITS_NAME_ON.search(path.read_text("utf-8")))

    def shown(self, module: str) -> str:
        """`distributed/popdist/` for a package, `support/rendezvous.py` for a module."""
        path = self.path(module)
        return f"{path.relative_to(self.folder).as_posix()}{'/' if path.is_dir() else ''}"

    def room(self, module: str) -> str:
        """`poptorch/` for any module in that subpackage, `errors.py` for a loose module."""
        if module == PACKAGE:
            return PACKAGE
        name = module.split(".")[1]
        return f"{name}/" if (self.folder / name).is_dir() else f"{name}.py"


def old_names(graph: ImportGraph) -> dict[str, str]:
    """Each module left at an old name, and the moved module it hands that name to."""
    return {graph.shown(m): graph.shown(_moved_to(graph, m))
            for m in graph.modules if m != PACKAGE and graph.is_old_name(m)}


def _moved_to(graph: ImportGraph, old: str) -> str:
    """The module an old name hands its name to: of those it imports, the one of the same name
    (`popdist.py` imports `distributed/popdist/` and its `poptorch.py`), else the shortest."""
    imported = graph.imported_by(old)
    same = [m for m in imported if m.rsplit(".", 1)[-1] == old.rsplit(".", 1)[-1]]
    return min(same or imported, key=len)


def room_imports(graph: ImportGraph) -> dict[str, set[str]]:
    """Each room, and the other rooms its modules import."""
    rooms: dict[str, set[str]] = {}
    for module in graph.modules:
        if module == PACKAGE or graph.is_old_name(module):
            continue  # the package's own __init__ re-exports, an old name points elsewhere
        room = graph.room(module)
        imported = {graph.room(m) for m in graph.imported_by(module)}
        rooms.setdefault(room, set()).update(imported - {room, PACKAGE})
    return rooms


def floors(rooms: dict[str, set[str]]) -> dict[str, int]:
    """Each room's floor: 0 for a room importing none, else one above its highest import.

    Raises:
        ValueError: rooms import each other; the message names the circle.
    """
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


def floors_block(package_folder: Path) -> str:
    """The page's block: the floors, top first, the old names, and what each room imports."""
    graph = ImportGraph(package_folder)
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
