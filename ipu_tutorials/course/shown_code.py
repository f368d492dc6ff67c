"""Lesson code written once: a walkthrough shows the package's own definitions by reference.

A walkthrough's code line `# show: ipu_tutorials.tutorial.models.Network` becomes, in the
learner's notebook, the source of that class exactly as the package defines it (d2l's `#@save`
the other way round: the package holds the code, which its tests exercise and later lessons
import, and the lesson shows it). The learner reads and runs the code in the cell as before,
and may change it there. Nothing is copied by hand, so a lesson and the package cannot disagree
in a fresh build; a stored notebook built before the package changed is named by
`ipu-course --check` (`drift`), and a walkthrough that defines again what the package
defines is refused (`hand_copies`).
"""
from __future__ import annotations

import ast
import dataclasses
import difflib
import functools
import os
import re

MARKER = re.compile(r"^# show: (\S+)[ \t]*$", re.M)
PACKAGE = "ipu_tutorials"
# A hand copy shorter than this is not worth a reference (a two-line forward is a shape, not a copy).
COPY_LINES = 4
DEFINITIONS = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


class LessonCodeError(ValueError):
    """A `# show:` marker that names nothing the package defines."""


@dataclasses.dataclass(frozen=True)
class Definition:
    """A class or function of the package: its dotted name, file, first line and source."""

    name: str
    path: str  # relative to the repository
    line: int  # its first line in that file (a decorator's, when it has one)
    source: str


def definition(name: str, root: str) -> Definition:
    """The top-level class or function `name` (ipu_tutorials.module.Name) as its file has it.

    Read from the file, not imported: the builder checks lessons without importing torch.

    Raises:
        LessonCodeError: the name is not ipu_tutorials' or no such definition exists.
    """
    module, _, attribute = name.rpartition(".")
    if module.split(".")[0] != PACKAGE:
        raise LessonCodeError(f"`# show: {name}`: a lesson shows the package's code; name it as "
                              f"{PACKAGE}.module.Name")
    base = os.path.join(root, *module.split("."))
    path = next((p for p in (base + ".py", os.path.join(base, "__init__.py")) if os.path.isfile(p)),
                None)
    if path is None:
        raise LessonCodeError(f"`# show: {name}`: there is no module {module}")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    tree = ast.parse(text)
    found = [n for n in tree.body if isinstance(n, DEFINITIONS) and n.name == attribute]
    if not found:
        known = ", ".join(n.name for n in tree.body if isinstance(n, DEFINITIONS))
        raise LessonCodeError(f"`# show: {name}`: {module} defines no top-level class or "
                              f"function {attribute!r} (it defines: {known})")
    node = found[-1]  # as Python does, the last definition of a name is the one that counts
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    source = "\n".join(text.splitlines()[first - 1:node.end_lineno])
    return Definition(name, os.path.relpath(path, root), first, source)


def expand(code: str, root: str) -> str:
    """A cell's code with each `# show:` line replaced by the source it names."""
    return MARKER.sub(lambda m: definition(m.group(1), root).source, code)


def shown(walkthrough: str) -> list[str]:
    """The names a walkthrough's `# show:` lines name, in order."""
    return MARKER.findall(walkthrough)


def drift(lesson: str, names: list[str], expected: str, built: str, root: str) -> str | None:
    """One line naming the shown definition that a built cell holds in an older form, and its
    first differing line; None when the cells differ elsewhere (not in the package's code)."""
    want, have = expected.splitlines(), built.splitlines()
    matcher = difflib.SequenceMatcher(None, want, have, autojunk=False)
    change = next((op for op in matcher.get_opcodes() if op[0] != "equal"), None)
    if change is None:
        return None
    _, i1, i2, j1, j2 = change
    for shown_definition in (definition(name, root) for name in names):
        start = _line_in(expected, shown_definition.source)
        end = None if start is None else start + len(shown_definition.source.splitlines())
        # lines the package dropped from a definition's end show as an insertion just after it
        if start is not None and (start <= i1 < end or i1 == i2 == end):
            package = f"`{want[i1].strip()}`" if i1 < i2 else "no line"
            notebook = f"`{have[j1].strip()}`" if j1 < j2 else "no line"
            return (f"{lesson}: the notebook shows an older {shown_definition.name}: "
                    f"{shown_definition.path}:{shown_definition.line + i1 - start} has "
                    f"{package} where the notebook has {notebook}")
    return None


def _line_in(text: str, part: str) -> int | None:
    """The line of `text` on which `part` starts, or None."""
    at = text.find(part)
    return None if at < 0 else text.count("\n", 0, at)


def hand_copies(lesson: str, walkthrough: str, root: str) -> list[str]:
    """One line for each top-level class or function of a walkthrough that the package defines
    too (the same code but for its name, docstring, type hints and comments): it should be
    shown with `# show:` instead of written again."""
    try:
        tree = ast.parse(walkthrough)
    except SyntaxError as error:
        return [f"{lesson}: line {error.lineno} is not Python: {error.msg}"]
    package, problems = package_shapes(root), []
    for node in tree.body:
        if isinstance(node, DEFINITIONS) and (same := package.get(_shape(node))):
            problems.append(f"{lesson}: line {node.lineno} defines {node.name} as {same} does: "
                            f"show it with `# show: {same}` instead of a copy")
    return problems


@functools.lru_cache(maxsize=4)  # one walk of the package serves every lesson of a check
def package_shapes(root: str) -> dict[str, str]:
    """Every top-level definition of the package: its shape -> its dotted name."""
    shapes = {}
    for directory, folders, files in os.walk(os.path.join(root, PACKAGE)):
        folders.sort()
        for file in sorted(files):
            if file.endswith(".py"):
                shapes.update(_shapes(os.path.join(directory, file), root))
    return shapes


def _shapes(path: str, root: str) -> dict[str, str]:
    """Each top-level definition of a package file: its shape -> its dotted name."""
    module = os.path.relpath(path, root)[:-len(".py")].replace(os.sep, ".").removesuffix(".__init__")
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    return {shape: f"{module}.{node.name}" for node in tree.body
            if isinstance(node, DEFINITIONS) and (shape := _shape(node))}


def _shape(node: ast.AST) -> str:
    """The code of a definition without its name, docstrings, type hints and comments ('' when
    it is too short to count as a copy)."""
    node = ast.parse(ast.unparse(node)).body[0]  # a copy, without comments
    node.name = "_"
    for inner in ast.walk(node):
        if isinstance(inner, DEFINITIONS) and ast.get_docstring(inner) is not None:
            inner.body = inner.body[1:] or [ast.Pass()]
        if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inner.returns = None
        if isinstance(inner, ast.arg):
            inner.annotation = None
    code = ast.unparse(node)
    return code if code.count("\n") + 1 >= COPY_LINES else ""
