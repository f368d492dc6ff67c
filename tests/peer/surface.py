"""Compare a facade's public surface with the real project's manifest (tests/peer/manifests/).

    python tests/peer/surface.py          # every finding, one line each

A facade name the real project lacks is an *extra*: it must be declared in
ipu_tutorials/support/extras_registry.py. Where both have a name, the parameters (names,
kinds, defaults), what a call returns (none / self) and the type of a stored attribute must
agree, unless the registry declares the difference. tests/peer/test_surface.py asserts that
this finds nothing.
"""
from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import inspect
import json
import pathlib
import sys
import types

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import manifest as manifest_tool  # noqa: E402
from source_facts import DUNDERS, facade_params, facade_returns, normal_default  # noqa: E402

FACADE_ROOT = "ipu_tutorials"


@dataclasses.dataclass(frozen=True)
class Finding:
    """One way a facade differs from the real surface: kind, the name, what differs."""
    kind: str   # extra, signature, returns, type
    name: str   # as the registry names it: "poptorch.Phase.ipu_ids"
    detail: str

    def __str__(self) -> str:
        return f"{self.kind:9s} {self.name}: {self.detail}"


@functools.cache
def load(name: str) -> dict:
    return json.loads((manifest_tool.MANIFESTS / f"{name}.json").read_text())


class Real:
    """One or more releases of a project, read from their manifests (a name is real when any
    of them has it; the first is the release the facade follows)."""

    def __init__(self, *names: str):
        self.manifests = [load(n) for n in names]

    def namespace(self, module: str) -> dict[str, str]:
        names = {}
        for manifest in reversed(self.manifests):
            names.update(manifest["surface"].get(module, {}))
        return names

    def definition(self, key: str) -> dict | None:
        """The definition in the first release that has it."""
        found = self.definitions(key)
        return found[0] if found else None

    def definitions(self, key: str) -> list[dict]:
        """The definition in every release that has it (a base class named through its
        package, `...precision.PrecisionPlugin`, is found in its module)."""
        found = []
        for manifest in self.manifests:
            table = manifest["definitions"]
            entry = table.get(key)
            if entry is None:
                package, _, name = key.rpartition(".")
                entry = next((v for k, v in table.items()
                              if k.startswith(package + ".") and k.endswith("." + name)), None)
            if entry is not None:
                found.append(entry)
        return found

    def class_names(self, key: str) -> tuple[dict, set[str]]:
        """A class's members (its own and its bases' in the project; each name's entries, one
        per release that has it) and the names of its bases outside the project (torch's,
        enum's ...), whose names it also has."""
        members, external, seen = {}, set(), set()
        todo = [key]
        while todo:
            current = todo.pop(0)
            if current in seen:
                continue
            seen.add(current)
            entries = self.definitions(current)
            if not entries:
                external.add(current)
                continue
            for entry in entries:  # a name any release has is real
                for name, member in entry["members"].items():
                    members.setdefault(name, []).append(member)
                for section in ("class_attributes", "attributes", "options"):
                    for name, stored in entry.get(section, {}).items():
                        members.setdefault(name, []).append({"kind": "attribute", **stored})
                todo += entry["bases"]
        return members, external


# --- the facade's side ------------------------------------------------------------------

def imported_by_init(package: types.ModuleType) -> set[str]:
    """The submodules a package's __init__ imports (`from .x import`, `from . import x`): the
    ones that are attributes of the package however the program runs (a submodule imported
    later, such as a lesson's helper, is not part of the package's surface)."""
    path = getattr(package, "__file__", "") or ""
    if not path.endswith("__init__.py"):
        return set()
    names = set()
    for node in ast.walk(ast.parse(pathlib.Path(path).read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            names |= ({node.module.split(".")[0]} if node.module else
                      {alias.name for alias in node.names})
    return names


def is_facade(obj, module: types.ModuleType) -> bool:
    """Whether a name of a facade module is the facade's own: defined in ipu_tutorials (not
    imported from torch, typing, lightning ...), or a submodule its __init__ imports."""
    if isinstance(obj, types.ModuleType):
        return (obj.__name__.startswith(module.__name__ + ".") and
                obj.__name__.rsplit(".", 1)[-1] in imported_by_init(module))
    if type(obj) in (int, float, str, bool, dict, list, tuple, frozenset, set):
        return True  # a constant: defined where it is
    owner = getattr(obj, "__module__", None)
    return isinstance(owner, str) and owner.startswith(FACADE_ROOT)


def module_names(module: types.ModuleType) -> dict[str, object]:
    """A facade module's public names: what `dir()` shows that the facade defines."""
    names = {}
    for name in dir(module):
        if name.startswith("_") or name == "annotations":
            continue
        obj = getattr(module, name)
        if is_facade(obj, module):
            names[name] = obj
    return names


def facade_classes(cls: type) -> list[type]:
    return [k for k in cls.__mro__ if k.__module__.startswith(FACADE_ROOT)]


def class_names(cls: type, instance=None, outside: set[str] = frozenset()) -> dict[str, object]:
    """The public names a facade class defines (not those its torch or enum bases give it),
    and those an instance holds (but not `outside`: what its torch bases store on it)."""
    names = {}
    for klass in reversed(facade_classes(cls)):
        for name, value in vars(klass).items():
            if ((not name.startswith("_") or name in DUNDERS) and
                    (instance is None or readable(instance, name))):
                names[name] = value
    if instance is not None:
        listed = dir(instance) if type(instance).__dir__ is not object.__dir__ else []
        for name in [*vars(instance), *listed]:
            if (not name.startswith("_") and name not in names and readable(instance, name)
                    and name not in external_bases(cls) and name not in outside):
                names[name] = getattr(instance, name, None)
    return names


def readable(instance, name: str) -> bool:
    """Whether an instance answers the name (a declaration PopTorch keeps private does not)."""
    try:
        getattr(instance, name)
    except AttributeError:
        return False
    except Exception:  # noqa: BLE001 - it exists, it only refused this sample
        return True
    return True


def external_bases(cls: type) -> set[str]:
    """The names every base of `cls` outside the facade gives it (torch's, enum's ...)."""
    names = set()
    for klass in cls.__mro__[1:]:
        if not klass.__module__.startswith(FACADE_ROOT):
            names |= set(dir(klass))
    return names


# Bases the real classes have that are not installed here, and the installed class each one
# derives from (optimum's BaseConfig is a transformers PretrainedConfig, with the same methods).
STAND_INS = {"optimum.configuration_utils.BaseConfig": "transformers.PretrainedConfig"}


def external_names(qualified: set[str]) -> set[str]:
    """The names of the real class's bases outside the project, where they can be imported."""
    names = set()
    for name in qualified:
        module, _, attr = STAND_INS.get(name, name).rpartition(".")
        try:
            names |= set(dir(getattr(importlib.import_module(module), attr)))
        except (ImportError, AttributeError, ValueError):
            continue
    return names


# --- parameters -------------------------------------------------------------------------

def compare_params(name: str, real: list[dict], facade: list[dict]) -> list[Finding]:
    want = [(p["name"], p["kind"], normal_default(p["default"]) if "default" in p else None)
            for p in real]
    have = [(p["name"], p["kind"], p.get("default")) for p in facade]
    if want == have:
        return []
    return [Finding("signature", name, f"the real one's ({_params_text(want)}), "
                                       f"the facade's ({_params_text(have)})")]


def _params_text(params) -> str:
    marks = {"VAR_POSITIONAL": "*", "VAR_KEYWORD": "**"}
    return ", ".join(marks.get(kind, "") + n + (f"={d}" if d is not None else "")
                     for n, kind, d in params)


# --- the walk ---------------------------------------------------------------------------

@dataclasses.dataclass
class Walk:
    """Compare one facade (its modules, classes and sample instances) with one project."""
    real: Real
    # facade module -> the real module (or modules, whose names it gathers) it stands for
    modules: dict[str, str | tuple[str, ...]]
    instances: dict = dataclasses.field(default_factory=dict)  # facade class -> an instance
    # instances of the torch classes facade classes derive from: what those store on `self`
    outside: list = dataclasses.field(default_factory=list)
    # facade class -> (the name it is shown by, the key of the real class)
    classes: dict = dataclasses.field(default_factory=dict)
    # classes only the facade constructs (the option groups): their __init__ is not compared
    built_inside: set = dataclasses.field(default_factory=set)
    findings: list[Finding] = dataclasses.field(default_factory=list)

    def run(self) -> list[Finding]:
        for facade_module, real_modules in self.modules.items():
            real_modules = (real_modules,) if isinstance(real_modules, str) else real_modules
            self._walk_module(importlib.import_module(facade_module), real_modules)
        for cls, (shown, key) in self.classes.items():
            self._compare_class(shown, cls, key)
        return self.findings

    def _walk_module(self, module: types.ModuleType, real_modules: tuple[str, ...]) -> None:
        spaces = [self.real.namespace(m) for m in real_modules]
        for name, obj in module_names(module).items():
            home = next((m for m, space in zip(real_modules, spaces) if name in space), None)
            if home is None:
                self.findings.append(Finding("extra", f"{real_modules[0]}.{name}",
                                             "not in the real module"))
                continue
            ref = dict(zip(real_modules, spaces))[home][name]
            entries = [] if ref.startswith("module ") else self.real.definitions(ref)
            qualified = f"{home}.{name}"
            if inspect.isclass(obj) and entries and entries[0]["kind"] == "class":
                self.classes.setdefault(obj, (qualified, ref))
            elif callable(obj) and entries and entries[0]["kind"] == "function":
                self.findings += _first_agreeing(
                    [self._function(qualified, None, obj, e) for e in entries])

    def _function(self, qualified: str, cls, func, entry: dict) -> list[Finding]:
        """How a facade function or method differs from one release's."""
        found = []
        bound = entry["kind"] in ("method", "classmethod", "property")
        if entry["kind"] != "property":
            params = facade_params(func, bound)
            if params is not None:
                found += compare_params(qualified, entry["params"], params)
        real_returns = entry["returns"]
        if real_returns in ("none", "self"):
            have = facade_returns(cls, func)
            if have != real_returns and have != "unknown":
                found.append(Finding("returns", qualified, f"the real one returns "
                                                           f"{real_returns}, the facade {have}"))
        return found

    def _compare_class(self, qualified: str, cls: type, key: str) -> None:
        members, external = self.real.class_names(key)
        inherited = external_names(external) | external_bases(cls)
        instance = self.instances.get(cls)
        stored_outside = {n for o in self.outside if isinstance(instance, type(o))
                          for n in vars(o)} | stored_by_bases(cls)
        for name, value in class_names(cls, instance, stored_outside).items():
            where = f"{qualified}.{name}"
            owner = next((k for k in cls.__mro__ if name in vars(k)), cls)
            if owner is not cls and owner in self.classes:
                continue  # reported once, on the class that defines it
            if name not in members:
                if name not in inherited:
                    self.findings.append(Finding("extra", where, "not in the real class"))
                continue
            if name == "__init__" and cls in self.built_inside:
                continue
            self.findings += _first_agreeing(
                [self._member(where, cls, instance, name, value, entry)
                 for entry in members[name]])

    def _member(self, where: str, cls, instance, name: str, value, entry: dict) -> list[Finding]:
        if entry["kind"] == "attribute":
            return self._type(where, instance, name, entry)
        func = value.fget if isinstance(value, property) else value
        if isinstance(value, (staticmethod, classmethod)):
            func = value.__func__
        elif not isinstance(value, property):
            func = getattr(cls, name, func)
        if callable(func) and not inspect.isclass(func):
            return self._function(where, cls, func, entry)
        return []

    @staticmethod
    def _type(where: str, instance, name: str, entry: dict) -> list[Finding]:
        wanted = entry.get("type")
        if instance is None or not wanted or not readable(instance, name):
            return []
        kinds = set(wanted.split("|"))
        if not kinds <= {"int", "bool", "str", "float", "dict", "list", "tuple", "None"}:
            return []  # a class or an annotation: not checked here
        value = getattr(instance, name)
        have = "None" if value is None else type(value).__name__
        if have in kinds:
            return []
        return [Finding("type", where, f"the real one holds {wanted} ({entry['value']}), the "
                                       f"facade {have} {value!r}")]


def _first_agreeing(results: list[list[Finding]]) -> list[Finding]:
    """Nothing when the facade agrees with one release; else how it differs from the first."""
    if not results or any(not found for found in results):
        return []
    return results[0]


def stored_by_bases(cls: type) -> set[str]:
    """What the __init__ of each base outside the facade stores on an object, where it runs
    without arguments (Lightning's strategy bases): those names are the base's, not the
    facade's."""
    names = set()
    for klass in cls.__mro__[1:]:
        if klass.__module__.startswith(FACADE_ROOT) or klass is object:
            continue
        try:
            bare = object.__new__(cls)
            klass.__init__(bare)
        except Exception:  # noqa: BLE001 - a base that needs arguments tells us nothing
            continue
        names |= set(vars(bare))
    return names


def main() -> int:
    import surface_facades

    findings = surface_facades.all_findings(declared=False)
    for finding in findings:
        print(finding)
    print(f"{len(findings)} findings")
    return 0


if __name__ == "__main__":
    sys.exit(main())
