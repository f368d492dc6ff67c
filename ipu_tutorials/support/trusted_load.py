"""torch.load that never runs code from the file: weights_only=True plus a short allowlist.

A file saved by PoplarExecutor.save holds the wrapped nn.Module, the poptorch.Options and the
optimizer, which torch's weights-only loader refuses by default. `load_trusted` allows just
those: classes of the poptorch facade (plain data: options, enums, strategies, optimizers,
BeginBlock's hooks),
nn.Module and torch Optimizer subclasses *already imported* by this process, and plain
containers. Anything else the file names (os.system, builtins.eval, a module not yet
imported) is refused before it is called, with one line naming the file and the name.
"""
from __future__ import annotations

import collections
import os
import pickle
import sys
import zipfile

import torch

from .atomic_io import FileFormatError

# the facade's modules of plain data (an executor or a data loader is never saved)
FACADE = tuple(f"ipu_tutorials.poptorch.{m}." for m in
               ("options", "option_groups", "tensor_locations", "enums", "strategies", "optim",
                "_variable_attributes", "blocks"))
CONTAINERS = {"builtins.dict": dict, "builtins.set": set, "builtins.frozenset": frozenset,
              "collections.OrderedDict": collections.OrderedDict,
              "collections.defaultdict": collections.defaultdict}


def _imported(name: str):
    """The object a "module.qualname" names, if that module is already imported; else None."""
    module_name, _, qualname = name.rpartition(".")
    while module_name and module_name not in sys.modules:  # nested classes: a.b.Outer.Inner
        module_name, _, outer = module_name.rpartition(".")
        qualname = f"{outer}.{qualname}"
    target = sys.modules.get(module_name)
    for part in qualname.split("."):
        if target is None or part.startswith("__"):
            return None
        target = getattr(target, part, None)
    return target


def allowed(name: str):
    """The class `name` stands for when a saved executor may hold it, else None."""
    if name in CONTAINERS:
        return CONTAINERS[name]
    target = _imported(name)
    if not isinstance(target, type):
        return None
    if name.startswith(FACADE) and f"{target.__module__}.".startswith(FACADE):
        return target
    if issubclass(target, (torch.nn.Module, torch.optim.Optimizer)):
        return target
    return None


def load_trusted(path: str | os.PathLike, what: str = "file saved by poptorch"):
    """torch.load(path, weights_only=True), allowing only the classes `allowed` accepts.

    Raises:
        FileNotFoundError: as open() does.
        FileFormatError: the file is empty, truncated or damaged, or names something that
            would run code when loaded.
    """
    path = os.fspath(path)
    if os.path.isfile(path) and os.path.getsize(path) == 0:
        raise FileFormatError(f"{path} is empty; expected a {what} (was its write interrupted?)")
    try:
        names = torch.serialization.get_unsafe_globals_in_checkpoint(path)
        refused = [n for n in names if allowed(n) is None]
        if refused:
            raise FileFormatError(f"{path} would call {', '.join(sorted(refused))} when loaded, "
                                  f"which ipu_tutorials refuses (it runs only weights-only "
                                  f"loads); load only files you saved yourself, after importing "
                                  f"the model's class")
        # each class under the name the file gives it (a class may have moved since it was saved)
        with torch.serialization.safe_globals([(allowed(n), n) for n in names]):
            return torch.load(path, weights_only=True)
    except (EOFError, RuntimeError, pickle.UnpicklingError, zipfile.BadZipFile, KeyError,
            ValueError, AttributeError, TypeError, OSError) as error:
        if isinstance(error, (FileFormatError, FileNotFoundError, PermissionError,
                              IsADirectoryError)):
            raise  # these already name the file
        first_line = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise FileFormatError(f"{path} is not a readable {what}: it is truncated, damaged or "
                              f"unsafe ({first_line[:200]})") from None
