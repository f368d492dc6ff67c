"""The code with which lessons draw their figures, read from walkthroughs/*.py, so that tests draw
each figure as its lesson does: the explorer calls, and each plotting cell from its `# alt:`
comment on (the figure's code, which the test runs as nbval runs the lesson; the cells before
it, which train or compile, are replaced by the test's own inputs)."""
from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

WALKTHROUGHS = Path(__file__).resolve().parents[1] / "walkthroughs"
EXPLORER_CALL = re.compile(r"^(\w+_(?:explorer|planner))\(.*\)$", re.MULTILINE)
SHOWN = re.compile(r"^# show: ([\w.]+)\.(\w+)$", re.MULTILINE)


def source(lesson: str) -> str:
    return (WALKTHROUGHS / f"{lesson}.py").read_text()


def imports(lesson: str) -> dict:
    """A namespace holding what the walkthrough imports (its import statements run alone) and
    the package's definitions it shows (`# show: module.Name` lines)."""
    text = source(lesson)
    statements = [node for node in ast.walk(ast.parse(text))
                  if isinstance(node, (ast.Import, ast.ImportFrom))]
    namespace: dict = {}
    exec(compile(ast.Module(statements, type_ignores=[]), f"{lesson} imports", "exec"), namespace)
    for module, name in SHOWN.findall(text):
        namespace[name] = getattr(importlib.import_module(module), name)
    return namespace


def explorer_calls() -> list[tuple[str, str]]:
    """(lesson, call) for each explorer a lesson shows, as written in its walkthrough."""
    return [(path.stem, match.group(0)) for path in sorted(WALKTHROUGHS.glob("*.py"))
            for match in EXPLORER_CALL.finditer(path.read_text())]


def explorer(lesson: str, call: str):
    """The explorer that `call` (a line of the walkthrough) shows: its arguments are literals or
    names the walkthrough imports."""
    called = ast.parse(call, mode="eval").body
    namespace = imports(lesson)

    def value(node):
        return namespace[node.id] if isinstance(node, ast.Name) else ast.literal_eval(node)

    return namespace[called.func.id](*map(value, called.args),
                                     **{k.arg: value(k.value) for k in called.keywords})


def figure_code(lesson: str, snippet: str) -> str:
    """The figure's code in the walkthrough's cell holding `snippet`: from its `# alt:`
    comment to the end of the cell."""
    cells = re.split(r"^# %%.*$", source(lesson), flags=re.MULTILINE)
    found = [cell for cell in cells if snippet in cell]
    assert len(found) == 1, f"{lesson}: {len(found)} cells hold {snippet!r}"
    lines = found[0].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("# alt:"))
    return "\n".join(lines[start:])
