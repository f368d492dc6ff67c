"""Read the real projects' public surfaces from their source, with `ast`, into JSON manifests.

    python tests/peer/manifest.py poptorch GIT_DIR            # print the manifest
    python tests/peer/manifest.py poptorch GIT_DIR --write    # write tests/peer/manifests/...
    python tests/peer/manifest.py --all MIRRORS_DIR --write   # every project, from MIRRORS_DIR

GIT_DIR is a clone or bare mirror of the project (`git show TAG:path` reads it); MIRRORS_DIR
holds them as `owner+name/repo` (the course's mirror layout) or `owner/name`. Nothing is
imported or executed: PopTorch needs the Poplar SDK. A manifest holds, for each module the
course's facades stand in for, its public names, and for each class and function its
parameters (name, kind, default as source text), what it returns (none / self / value, from
its return statements), the exceptions it raises (`assert` is AssertionError), its attributes'
types where the source shows them, and the exception class of each rule in
surface_rules.toml. tests/peer/test_manifests.py checks that this tool reproduces the
committed manifests.
"""
from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import json
import pathlib
import subprocess
import sys
import tomllib

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from source_facts import (DUNDERS, class_entry, enum_value_types, function,  # noqa: E402,F401
                          own_nodes, raises, returns)

HERE = pathlib.Path(__file__).resolve().parent
MANIFESTS = HERE / "manifests"
RULES = HERE / "surface_rules.toml"


@dataclasses.dataclass(frozen=True)
class Project:
    """Where a project's modules lie and which of them the facades stand in for."""
    name: str
    repository: str           # owner/name on GitHub
    tags: tuple[str, ...]     # the releases read; one manifest each
    root: str                 # the folder that is `package` in the source tree
    package: str              # its import name
    modules: tuple[str, ...]  # module files under root, read and recorded
    surface: tuple[str, ...]  # modules whose public names are the surface
    # functions that build the exception a `raise` statement raises: their class
    error_factories: tuple[tuple[str, str], ...] = ()


PROJECTS = {
    "poptorch": Project(
        "poptorch", "graphcore/poptorch", ("sdk/poptorch/3.4.0",), "python", "poptorch",
        ("__init__.py", "_args_parser.py", "_dataloader.py", "_impl.py", "_logging.py",
         "_optimizer_attributes.py", "_options_config.py", "_options_impl.py",
         "_poplar_executor.py", "_poptorch_data.py", "_printing.py", "_utils.py", "enums.py",
         "ops.py", "optim.py", "options.py", "profiling.py", "testing.py"),
        ("poptorch", "poptorch.enums", "poptorch.ops", "poptorch.options", "poptorch.optim",
         "poptorch.profiling", "poptorch.testing"),
        # python/_impl.py: createPoptorchError returns poptorch_core.Error, poptorch.Error
        (("_impl.createPoptorchError", "poptorch.Error"), ("createPoptorchError", "poptorch.Error"))),
    # v0.7.1 is what the facade follows; the others are the older releases lesson 13 and
    # docs/ipuconfig.md teach (the values per POD type of v0.2.1 to v0.6.0).
    "optimum-graphcore": Project(
        "optimum-graphcore", "huggingface/optimum-graphcore",
        ("v0.2.1", "v0.2.3", "v0.5.0", "v0.6.0", "v0.6.1", "v0.7.0", "v0.7.1"),
        "optimum/graphcore", "optimum.graphcore",
        ("__init__.py", "ipu_configuration.py", "modeling_utils.py"),
        ("optimum.graphcore", "optimum.graphcore.ipu_configuration",
         "optimum.graphcore.modeling_utils")),
    # the IPU classes, and the base classes they inherit their other names from at 2.0.9
    "lightning": Project(
        "lightning", "Lightning-AI/lightning", ("2.0.9",), "src/lightning/pytorch",
        "lightning.pytorch",
        ("accelerators/ipu.py", "strategies/ipu.py", "plugins/precision/ipu.py",
         "accelerators/accelerator.py", "strategies/parallel.py", "strategies/strategy.py",
         "plugins/precision/precision_plugin.py"),
        ("lightning.pytorch.accelerators.ipu", "lightning.pytorch.strategies.ipu",
         "lightning.pytorch.plugins.precision.ipu")),
}


class Source:
    """One release of a git repository, read with `git show` (a bare mirror will do)."""

    def __init__(self, git_dir: pathlib.Path, ref: str):
        self.git_dir, self.ref = git_dir, ref
        self.commit = self._git("rev-parse", f"{ref}^{{commit}}").strip()

    def _git(self, *args: str) -> str:
        return subprocess.run(["git", f"--git-dir={self.git_dir}", *args], check=True,
                              capture_output=True, text=True).stdout

    def list(self, folder: str) -> list[str]:
        """The files and folders directly inside `folder`."""
        return self._git("ls-tree", "--name-only", f"{self.commit}:{folder}").split()

    def read(self, path: str) -> str | None:
        try:
            return self._git("show", f"{self.commit}:{path}")
        except subprocess.CalledProcessError:
            return None


def module_name(project: Project, file: str) -> str:
    parts = file[:-len(".py")].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([project.package, *parts])


# --- a project's modules and their names ------------------------------------------------

class Reader:
    """One release of one project: its modules, definitions and public names."""

    def __init__(self, project: Project, source: Source):
        self.project, self.source = project, source
        self.trees, self.files = {}, {}
        for file in project.modules:
            path = f"{project.root}/{file}"
            text = source.read(path)
            if text is not None:
                name = module_name(project, file)
                self.trees[name], self.files[name] = ast.parse(text), path
        self.enums = enum_value_types(self.trees)
        self.factories = dict(project.error_factories)
        self.imports = {module: self._import_table(module) for module in self.trees}
        self.definitions = {}
        for module, tree in self.trees.items():
            self._define(module, tree.body, module)

    def _import_table(self, module: str) -> dict[str, str]:
        """Each name a module binds at its top level -> the qualified name it stands for."""
        table = {}
        for node in top_level(self.trees[module].body):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    table[alias.asname or alias.name.split(".")[0]] = (
                        alias.name if alias.asname else alias.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom):
                origin = self.resolve(module, node.level, node.module)
                for alias in node.names:
                    table[alias.asname or alias.name] = f"{origin}.{alias.name}"
            elif isinstance(node, (ast.ClassDef, ast.FunctionDef)):
                table[node.name] = f"{module}.{node.name}"
        return table

    def qualify(self, module: str, text: str) -> str:
        """A base class as written (`_options_impl.OptionsDict`) -> its qualified name."""
        head, _, rest = text.partition(".")
        origin = self.imports[module].get(head)
        if origin is None:
            return text
        return f"{origin}.{rest}" if rest else origin

    def _define(self, module: str, body: list[ast.stmt], prefix: str) -> None:
        for node in top_level(body):
            key = f"{prefix}.{node.name}" if hasattr(node, "name") else None
            if isinstance(node, ast.ClassDef):
                entry = class_entry(node, self.files[module], self.enums, self.factories)
                entry["bases"] = [self.qualify(module, base) for base in entry["bases"]]
                self.definitions[key] = entry
            elif (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and not node.name.startswith("_")):
                self.definitions[key] = function(node, self.files[module], False,
                                                 self.factories)

    def resolve(self, module: str, level: int, name: str | None) -> str:
        """The absolute module a `from ... import` names."""
        if level == 0:
            return name or ""
        package = (module if self.files[module].endswith("__init__.py") else
                   module.rsplit(".", 1)[0])
        for _ in range(level - 1):
            package = package.rsplit(".", 1)[0]
        return f"{package}.{name}" if name else package

    def namespace(self, module: str, seen: frozenset = frozenset()) -> dict[str, str]:
        """Public name -> what it is: the key of a definition, a module, or where it comes
        from when that is not read (another module of the project, its C++ core)."""
        if module not in self.trees or module in seen:
            return {}
        names = {}
        tree = self.trees[module]
        for node in top_level(tree.body):
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                names[node.name] = f"{module}.{node.name}"
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        names[target.id] = f"{module}.{target.id}"
            elif isinstance(node, ast.ImportFrom):
                origin = self.resolve(module, node.level, node.module)
                if not origin.startswith(self.project.package.split(".")[0]):
                    continue  # torch, typing, ...: not the project's names
                if (self.files[module].endswith("__init__.py") and
                        origin.startswith(module + ".") and origin in self.trees):
                    # importing a submodule makes it an attribute of its package
                    child = origin[len(module) + 1:].split(".")[0]
                    names[child] = f"module {module}.{child}"
                for alias in node.names:
                    if alias.name == "*":
                        names.update(self.namespace(origin, seen | {module}))
                    else:
                        names[alias.asname or alias.name] = self._imported(origin, alias.name,
                                                                           seen | {module})
        exported = self._all(tree)
        if exported is not None:
            return {n: names.get(n, f"{module}.{n}") for n in exported}
        return {n: v for n, v in names.items() if not n.startswith("_")}

    def _imported(self, origin: str, name: str, seen: frozenset) -> str:
        if f"{origin}.{name}" in self.trees or (origin == self.project.package
                                                 and name in self.submodules()):
            return f"module {origin}.{name}"
        inner = self.namespace(origin, seen) if origin in self.trees else {}
        return inner.get(name, f"{origin}.{name}")

    @staticmethod
    def _all(tree: ast.Module) -> list[str] | None:
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
                try:
                    return list(ast.literal_eval(node.value))
                except ValueError:
                    return None
        return None

    @functools.cache
    def submodules(self) -> list[str]:
        """The package's own modules and subpackages (what `import package.x` finds)."""
        listing = self.source.list(self.project.root)
        names = {path.rsplit("/", 1)[-1].removesuffix(".py") for path in listing
                 if path.endswith(".py") or "." not in path.rsplit("/", 1)[-1]}
        return sorted(n for n in names if n != "__init__")

    def manifest(self) -> dict:
        surface = {module: dict(sorted(self.namespace(module).items()))
                   for module in self.project.surface if module in self.trees}
        package = surface.get(self.project.package)
        if package is not None:
            for name in self.submodules():
                package.setdefault(name, f"module {self.project.package}.{name}")
            surface[self.project.package] = dict(sorted(package.items()))
        return {"project": self.project.name, "repository": self.project.repository,
                "tag": self.source.ref, "commit": self.source.commit,
                "tool": "tests/peer/manifest.py",
                "files": {m: self.files[m] for m in sorted(self.files)},
                "surface": surface, "definitions": dict(sorted(self.definitions.items())),
                "rules": self.rules()}

    def rules(self) -> dict:
        """Each rule of surface_rules.toml for this project: the exception class it raises."""
        found = {}
        for rule in tomllib.loads(RULES.read_text())["rule"]:
            if rule["project"] != self.project.name or self.source.ref not in rule.get(
                    "tags", self.project.tags):
                continue
            found[rule["id"]] = self._rule(rule)
        return found

    def _rule(self, rule: dict) -> dict:
        if "exception" in rule:  # the tool cannot tell (a C++ check): cited by hand
            return {"where": rule["where"], "exception": rule["exception"], "how": "cited",
                    "at": rule["source"]}
        node, file = self._find(rule["where"])
        for found in sorted(raises(ast.walk(node), self.factories), key=lambda r: r["line"]):
            if rule["match"] in found["message"] or rule["match"] in found.get("condition", ""):
                how = "assert" if found["exception"] == "AssertionError" else "raise"
                return {"where": rule["where"], "exception": found["exception"], "how": how,
                        "at": f"{file}:{found['line']}"}
        raise LookupError(f"rule {rule['id']}: no raise in {rule['where']} says "
                          f"{rule['match']!r}")

    def _find(self, where: str) -> tuple[ast.AST, str]:
        """The class or function named by a dotted path (module.Class.method)."""
        for module, tree in self.trees.items():
            if not where.startswith(module + "."):
                continue
            node = tree
            for part in where[len(module) + 1:].split("."):
                node = next((n for n in ast.walk(node) if getattr(n, "name", None) == part
                             and isinstance(n, (ast.ClassDef, ast.FunctionDef))), None)
                if node is None:
                    break
            if node is not None:
                return node, self.files[module]
        raise LookupError(f"{where} is not in {self.project.name} at {self.source.ref}")


def top_level(body: list[ast.stmt]):
    """A module's statements, looking inside top-level `if` and `try` blocks too."""
    for node in body:
        if isinstance(node, ast.If):
            yield from top_level(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            yield from top_level(node.body + node.orelse + node.finalbody)
        else:
            yield node


# --- files and the command line ---------------------------------------------------------

def manifest_path(project: Project, tag: str) -> pathlib.Path:
    return MANIFESTS / f"{project.name}-{tag.rsplit('/', 1)[-1]}.json"


def find_git_dir(mirrors: pathlib.Path, repository: str) -> pathlib.Path | None:
    owner, name = repository.split("/")
    for candidate in (mirrors / f"{owner}+{name}" / "repo", mirrors / owner / name / ".git",
                      mirrors / name / ".git"):
        if candidate.is_dir():
            return candidate
    return None


def build(project: Project, git_dir: pathlib.Path, tag: str) -> dict:
    return Reader(project, Source(git_dir, tag)).manifest()


def dumps(manifest: dict) -> str:
    return json.dumps(manifest, indent=1, sort_keys=False) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("project", nargs="?", choices=sorted(PROJECTS))
    parser.add_argument("git_dir", nargs="?", type=pathlib.Path)
    parser.add_argument("--all", type=pathlib.Path, metavar="MIRRORS_DIR",
                        help="every project, each found under MIRRORS_DIR")
    parser.add_argument("--write", action="store_true", help="write tests/peer/manifests/")
    args = parser.parse_args(argv)
    if args.all:
        jobs = [(p, find_git_dir(args.all, p.repository)) for p in PROJECTS.values()]
    elif args.project and args.git_dir:
        jobs = [(PROJECTS[args.project], args.git_dir)]
    else:
        parser.error("give a project and its git directory, or --all MIRRORS_DIR")
    for project, git_dir in jobs:
        if git_dir is None:
            print(f"{project.repository}: no mirror under {args.all}", file=sys.stderr)
            return 1
        for tag in project.tags:
            text = dumps(build(project, git_dir, tag))
            if args.write:
                MANIFESTS.mkdir(exist_ok=True)
                manifest_path(project, tag).write_text(text)
                print(f"wrote {manifest_path(project, tag).relative_to(HERE.parent.parent)}")
            else:
                sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
