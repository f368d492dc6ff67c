"""The package's layout rules: data flows one way, one door, small modules and functions."""
import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "ipu_tutorials"


def imports(path: pathlib.Path) -> set[str]:
    """Absolute names of the ipu_tutorials modules a file imports."""
    package = path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1]
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = ".".join(package[:len(package) - node.level + 1] + ((node.module,) if node.module else ()))
            names |= {base} | {f"{base}.{a.name}" for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
    return {n for n in names if n.startswith("ipu_tutorials")}


def sources(subpackage: str):
    return sorted((PACKAGE / subpackage).rglob("*.py"))


@pytest.mark.parametrize("path", sources("simulator"), ids=lambda p: p.name)
def test_the_simulator_never_imports_what_sits_downstream_of_it(path):
    downstream = ("ipu_tutorials.poptorch", "ipu_tutorials.profiling", "ipu_tutorials.classroom",
                  "ipu_tutorials.tutorial")
    assert not [n for n in imports(path) if n.startswith(downstream)]


@pytest.mark.parametrize("path", sources("poptorch"), ids=lambda p: p.name)
def test_only_the_door_of_the_facade_imports_the_simulator(path):
    reaches = [n for n in imports(path) if n.startswith("ipu_tutorials.simulator")]
    assert path.name == "_to_simulator.py" or not reaches, reaches


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: p.name)
def test_modules_stay_small(path):
    assert len(path.read_text().splitlines()) <= 400
