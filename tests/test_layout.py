"""The package's layout rules: import-linter's contracts (pyproject.toml) hold, they fail when
broken, and what they cannot say: small modules, and every module with behaviour has its tests."""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "ipu_tutorials"


# --- the import rules: import-linter's contracts in pyproject.toml --------------------------------
def lint_imports(root: pathlib.Path) -> subprocess.CompletedProcess:
    """Check the package under root against the contracts of root/pyproject.toml."""
    command = pathlib.Path(sys.executable).with_name("lint-imports")
    return subprocess.run([str(command), "--no-cache", "--no-logo", "pyproject.toml"], cwd=root,
                          env={**os.environ, "PYTHONPATH": str(root)}, capture_output=True,
                          text=True, timeout=120)


def test_the_import_contracts_are_kept():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout, result.stdout


@pytest.mark.parametrize("module, line, contract", [
    ("simulator/spec.py", "from ipu_tutorials import classroom",
     "Each floor imports only the floors below it"),
    ("poptorch/executor.py", "from ipu_tutorials.simulator import compile",
     "Only poptorch._to_simulator opens the facade's door to the simulator"),
    ("simulator/units.py", "from ipu_tutorials.simulator import hardware",
     "No two modules or packages import each other"),
], ids=["upward", "second-door", "circle"])
def test_a_broken_contract_fails_the_check(tmp_path, module, line, contract):
    shutil.copytree(PACKAGE, tmp_path / PACKAGE.name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    path = tmp_path / PACKAGE.name / module
    path.write_text(path.read_text() + f"\n{line}  # noqa\n")
    result = lint_imports(tmp_path)
    assert result.returncode != 0
    assert f"{contract} BROKEN" in " ".join(result.stdout.split()), result.stdout


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: p.name)
def test_modules_stay_small(path):
    assert len(path.read_text().splitlines()) <= 400


# --- every module with behaviour has its test file ---------------------------------------------
TESTS = ROOT / "tests"
# Modules without behaviour of their own: package files that only re-export, enums, tables of
# names, exception classes, a typing Protocol and a `python -m` entry that calls a command's
# main. Nothing else belongs here.
NO_BEHAVIOUR = {
    "__init__.py", "classroom/__init__.py", "classroom/exercises/__init__.py",
    "course/__init__.py", "course/__main__.py",
    "classroom/explorers/__init__.py", "distributed/__init__.py", "optimum/__init__.py",
    "optimum/graphcore/models/__init__.py", "poptorch/__init__.py", "profiling/__init__.py",
    "simulator/__init__.py", "support/__init__.py", "tutorial/__init__.py",
    "calibration/__init__.py", "torch_engines/__init__.py",
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
    assert not missing, (
        "modules without their test file (tests/<same path>/test_<module>.py):\n"
        + "\n".join(f"ipu_tutorials/{name} -> "
                    f"{mirrored_tests(PACKAGE / name)[0].relative_to(TESTS.parent)}"
                    for name in missing))


def test_the_list_of_exceptions_holds_only_modules_that_exist():
    modules = {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")}
    assert NO_BEHAVIOUR <= modules
