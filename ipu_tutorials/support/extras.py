"""Which simulator extras a program uses, and on which of its lines: off until asked for.

An *extra* is a name a facade offers that the real project lacks (`model.plan`); each is
declared in `extras_registry`. The facades serve every extra through `served_property`,
`served_method` or `record`, which note the use while a recording runs and cost one test of a
global when none does. A use is noted against the first frame outside ipu_tutorials (the
learner's line); a use from inside the package is the simulator's own and is not noted.

    with recording_extras() as uses:
        plan = model.plan                      # noted: Use("poptorch.PoplarExecutor.plan", ...)
    unmarked_lines(cell_source, [u.line for u in uses if u.file == cell_file])

A notebook kernel records for the whole session when `IPU_TUTORIALS_EXTRAS_LOG` names a file
when the package is imported: each use is appended to it as one JSON line.
"""
from __future__ import annotations

import ast
import contextlib
import dataclasses
import functools
import json
import linecache
import os
import pathlib
import sys
from typing import Callable, Iterator

from .extras_registry import BY_NAME

MARKER = "# simulator extra"  # what a lesson line that uses an extra carries (also "extras")
LOG_VARIABLE = "IPU_TUTORIALS_EXTRAS_LOG"
_PACKAGE = str(pathlib.Path(__file__).resolve().parent.parent) + os.sep


@dataclasses.dataclass(frozen=True)
class Use:
    """One use of an extra: which, and the file, line and text of the code that asked."""
    extra: str
    file: str
    line: int
    code: str


_uses: list[Use] | None = None  # the running recording; None when nothing records


def record(name: str, depth: int = 1) -> None:
    """Note a use of the extra `name` while a recording runs.

    Args:
        name: the extra, as extras_registry declares it.
        depth: the frames between this call and the code that used the extra (1: the
            function calling `record` was itself called by that code).
    """
    if _uses is None:
        return
    if name not in BY_NAME:
        raise KeyError(f"{name} is not declared in ipu_tutorials/support/extras_registry.py")
    frame = sys._getframe(depth + 1)
    file = frame.f_code.co_filename
    if os.path.abspath(file).startswith(_PACKAGE):
        return  # the simulator's own use, not the learner's
    use = Use(name, file, frame.f_lineno, linecache.getline(file, frame.f_lineno).strip())
    _uses.append(use)
    _append_to_log(use)


@contextlib.contextmanager
def recording_extras() -> Iterator[list[Use]]:
    """Record the extras used inside the `with` block; yields the list they are added to."""
    global _uses
    outer, _uses = _uses, []
    uses = _uses
    try:
        yield uses
    finally:
        _uses = outer
        if outer is not None:
            outer.extend(uses)


def start_recording() -> list[Use]:
    """Record from now until the process ends (a notebook kernel's setup cell); returns the
    list uses are added to."""
    global _uses
    if _uses is None:
        _uses = []
    return _uses


def _append_to_log(use: Use) -> None:
    """One JSON line per use, appended with a single write (atomic for a short line)."""
    path = os.environ.get(LOG_VARIABLE)
    if not path:
        return
    line = (json.dumps(dataclasses.asdict(use)) + "\n").encode()
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(descriptor, line)
    finally:
        os.close(descriptor)


def read_log(path: str | os.PathLike) -> list[Use]:
    """The uses a kernel appended to the log file (none when it does not exist)."""
    path = pathlib.Path(path)
    if not path.exists():
        return []
    return [Use(**json.loads(line)) for line in path.read_text().splitlines() if line.strip()]


# --- serving an extra -----------------------------------------------------------------------

def served_property(name: str, getter: Callable) -> property:
    """A read-only property that notes each read of the extra `name`."""
    @functools.wraps(getter)
    def read(self):
        record(name)
        return getter(self)
    return property(read)


def served_method(name: str) -> Callable:
    """Decorator: the method (or function) is the extra `name`; each call is noted."""
    def decorate(function: Callable) -> Callable:
        @functools.wraps(function)
        def call(*args, **kwargs):
            record(name)
            return function(*args, **kwargs)
        return call
    return decorate


def module_getattr(module: str, served: dict[str, object]) -> Callable:
    """A module `__getattr__` (PEP 562) serving the extras `served` (short name -> object):
    each read is noted as `<module>.<name>`."""
    def __getattr__(attribute: str):
        if attribute in served:
            record(f"{module}.{attribute}")
            return served[attribute]
        raise AttributeError(f"module {module!r} has no attribute {attribute!r}")
    return __getattr__


# --- checking a lesson ----------------------------------------------------------------------

def unmarked_lines(cell_source: str, lines) -> list[tuple[int, str]]:
    """The used lines of a cell (1-based line numbers) that do not carry the marker.

    A line is marked when the statement it belongs to carries `# simulator extra` (or
    `# simulator extras`) on any of its lines: a call spread over several lines may carry it
    on any one of them. For a compound statement (`for`, `with`, `if`, ...) only its header
    counts, not its body.
    """
    text = cell_source.splitlines()
    missing = []
    for number in sorted(set(lines)):
        if not 1 <= number <= len(text):
            continue
        first, last = _statement_span(cell_source, number)
        if not any(MARKER in text[i - 1] for i in range(first, last + 1)):
            missing.append((number, text[number - 1].strip()))
    return missing


def _statement_span(source: str, number: int) -> tuple[int, int]:
    """The first and last line of the innermost statement holding line `number` (for a
    compound statement, its header); the line alone when the cell does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return number, number
    spans = [(number, number)]
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            body = getattr(node, "body", None)
            last = body[0].lineno - 1 if isinstance(body, list) and body else node.end_lineno
            if node.lineno <= number <= last:
                spans.append((node.lineno, last))
    return min(spans[1:] or spans, key=lambda span: span[1] - span[0])


def uses_by_cell(uses: list[Use], cell_sources: list[str]) -> dict[int, list[Use]]:
    """The uses of each code cell (by its index in `cell_sources`): an IPython kernel runs a
    cell as a file named from a hash of its source, which this recomputes. Uses in files that
    are no cell (a module the lesson imports) are left out."""
    from ipykernel.compiler import get_tmp_hash_seed, murmur2_x86

    by_name = {f"{murmur2_x86(source, get_tmp_hash_seed())}.py": index
               for index, source in enumerate(cell_sources)}
    cells: dict[int, list[Use]] = {}
    for use in uses:
        index = by_name.get(os.path.basename(use.file))
        if index is not None:
            cells.setdefault(index, []).append(use)
    return cells


if os.environ.get(LOG_VARIABLE):
    start_recording()
