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
    if path.name == "_option_rules.py":  # the option checks read which chips exist, nothing more
        assert set(reaches) <= {"ipu_tutorials.simulator.hardware",
                                "ipu_tutorials.simulator.hardware.ipu_spec"}, reaches
        return
    assert path.name == "_to_simulator.py" or not reaches, reaches


# --- the import graph has no circle --------------------------------------------------------------
def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imported_modules(path: pathlib.Path) -> set[str]:
    """The package's modules a file imports (anywhere in it, TYPE_CHECKING blocks included).

    `from . import x` names the module x, not the package; `from .x import Y` names x.
    """
    name = module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module if not node.level else ".".join(
                package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
            submodules = {f"{base}.{a.name}" for a in node.names} & MODULES.keys()
            found |= submodules or ({base} & MODULES.keys())
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names} & MODULES.keys()
    return found - {name}


def import_graph() -> dict[str, set[str]]:
    return {name: imported_modules(path) for name, path in MODULES.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    order, low, stack, found = {}, {}, [], []

    def visit(node):
        order[node] = low[node] = len(order)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in order:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], order[nxt])
        if low[node] == order[node]:
            group = stack[stack.index(node):]
            del stack[stack.index(node):]
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in order:
            visit(node)
    return found


def test_the_import_graph_has_no_circle():
    found = circles(import_graph())
    assert not found, "modules that import each other (move the shared part below them): " + \
        "; ".join(" <-> ".join(c) for c in found)


def test_the_circle_finder_finds_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: p.name)
def test_modules_stay_small(path):
    assert len(path.read_text().splitlines()) <= 400


# --- every module with behaviour has its test file ---------------------------------------------
TESTS = PACKAGE.parent / "tests"
# Modules without behaviour of their own: package files that only re-export, enums, tables of
# names, exception classes and a typing Protocol. Nothing else belongs here.
NO_BEHAVIOUR = {
    "__init__.py", "classroom/__init__.py", "classroom/exercises/__init__.py",
    "classroom/explorers/__init__.py", "distributed/__init__.py", "optimum/__init__.py",
    "optimum/graphcore/models/__init__.py", "poptorch/__init__.py", "profiling/__init__.py",
    "simulator/__init__.py", "support/__init__.py", "tutorial/__init__.py",
    "tutorial/calibration/__init__.py", "tutorial/torch_engines/__init__.py",
    "errors.py", "poptorch/enums.py", "poptorch/_popart_names.py", "simulator/optimizer.py",
}


def mirrored_tests(module: pathlib.Path) -> list[pathlib.Path]:
    """Where a module's tests live: tests/<same folders>/test_<name>.py (a leading _ dropped);
    a package's own behaviour in tests/<package>/test_<package>.py or beside the package."""
    folders = module.relative_to(PACKAGE).parent
    if module.name == "__init__.py":
        name = folders.name
        return [TESTS / folders / f"test_{name}.py", TESTS / folders.parent / f"test_{name}.py"]
    return [TESTS / folders / f"test_{module.stem.lstrip('_')}.py"]


def is_old_name(path: pathlib.Path) -> bool:
    """A module left where a moved one was, handing its name to it (tests/test_old_names.py
    checks every one)."""
    return "sys.modules[__name__] = " in path.read_text()


def untested_modules() -> list[str]:
    modules = {p.relative_to(PACKAGE).as_posix(): p for p in PACKAGE.rglob("*.py")}
    return sorted(name for name, path in modules.items()
                  if name not in NO_BEHAVIOUR and not is_old_name(path)
                  and not any(t.is_file() for t in mirrored_tests(path)))


def test_every_module_with_behaviour_has_its_mirrored_test_file():
    missing = untested_modules()
    assert not missing, "modules without their test file (tests/<same path>/test_<module>.py):\n" + \
        "\n".join(f"ipu_tutorials/{name} -> {mirrored_tests(PACKAGE / name)[0].relative_to(TESTS.parent)}"
                  for name in missing)


def test_the_list_of_exceptions_holds_only_modules_that_exist():
    modules = {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")}
    assert NO_BEHAVIOUR <= modules
