"""What the simulated device keeps across wrapped models: weight versions, weight copies, wrappers.

Each piece of global state has one owner object with a `reset()`: WEIGHT_VERSIONS (which
weights a training model last wrote) and TRAINING_WRAPPERS (one live trainingModel per module).
"""
from __future__ import annotations

import copy
import weakref

import torch
from torch.utils.weak import WeakIdKeyDictionary


class WeightVersions:
    """A counter bumped each time a training model writes weights back to the host, and the
    counter's value when each weight was last written."""

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.version = 0
        self.written = WeakIdKeyDictionary()  # weight -> version when last written

    def mark_written(self, params) -> None:
        self.version += 1
        for p in params:
            self.written[p] = self.version

    def changed_since(self, version: int, params) -> bool:
        return any(self.written.get(p, 0) > version for p in params)


WEIGHT_VERSIONS = WeightVersions()


class DeviceWeights:
    """The weights on the (simulated) device and the host version they were uploaded at.

    An inference model runs its own copy, refreshed when a training model changed the host
    weights since; a training model writes to the host model directly and keeps no copy.
    """

    def __init__(self, host: torch.nn.Module, keep_copy: bool):
        self.host = host
        self.copy = copy.deepcopy(host).eval() if keep_copy else None
        self.uploaded = WEIGHT_VERSIONS.version

    def current(self) -> torch.nn.Module:
        """The inference copy, uploaded again first if a training model wrote the weights."""
        if WEIGHT_VERSIONS.changed_since(self.uploaded, self.host.parameters()):
            self.upload()
        return self.copy

    def upload(self) -> None:
        if self.copy is not None:
            self.copy.load_state_dict(self.host.state_dict())
        self.uploaded = WEIGHT_VERSIONS.version

    def download(self) -> None:
        if self.copy is not None:
            self.host.load_state_dict(self.copy.state_dict())


class TrainingWrappers:
    """Each module's live training wrapper: PopTorch allows one per module at a time."""

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        # module -> weak reference to its wrapper: a strong value would keep the module alive
        self.by_module: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def check_free(self, module: torch.nn.Module) -> None:
        """Raise RuntimeError if a live training wrapper already trains the module."""
        current = self.by_module.get(module)
        if current is not None and current() is not None:
            raise RuntimeError("this model is already wrapped in poptorch.trainingModel; call "
                               ".destroy() on that wrapper before wrapping it again")

    def claim(self, module: torch.nn.Module, wrapper) -> None:
        """Record `wrapper` as the module's training wrapper (after check_free)."""
        self.by_module[module] = weakref.ref(wrapper)

    def release(self, module: torch.nn.Module, wrapper) -> None:
        current = self.by_module.get(module)
        if current is not None and current() is wrapper:
            del self.by_module[module]


TRAINING_WRAPPERS = TrainingWrappers()
