"""An import hook for running other projects' tests: `import poptorch` gives ipu_tutorials.poptorch.

Shared by peer_alias (PopTorch's and Lightning 2.0.9's suites) and optimum_alias
(optimum-graphcore's). An alias names the project's module object itself, not a copy, so
`poptorch.Options is ipu_tutorials.poptorch.Options`, and `import poptorch.optim` works too.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys


class AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers `import alias.x` with the module `target.x` (a prefix match on the names)."""

    def __init__(self, aliases: dict[str, str]):
        self.aliases = dict(aliases)
        self.own_specs = {}

    def target(self, name: str) -> str | None:
        for alias, real in self.aliases.items():
            if name == alias or name.startswith(alias + "."):
                return real + name[len(alias):]
        return None

    def find_spec(self, name, path=None, target=None):
        if self.target(name) is None:
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec):
        module = importlib.import_module(self.target(spec.name))
        self.own_specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module):
        # the target module has run already; importlib stamped the alias spec on it: give it
        # its own back
        module.__spec__ = self.own_specs.pop(module.__spec__.name, module.__spec__)


def install(aliases: dict[str, str]) -> AliasFinder:
    """Put a finder for these aliases first on sys.meta_path (once)."""
    for finder in sys.meta_path:
        if isinstance(finder, AliasFinder) and finder.aliases == aliases:
            return finder
    finder = AliasFinder(aliases)
    sys.meta_path.insert(0, finder)
    return finder
