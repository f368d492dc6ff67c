"""What the simulated device keeps across wrapped models: weight versions, weight copies, wrappers.

Each piece of global state has one owner object with a `reset()`: WEIGHT_VERSIONS (which
weights a training model last wrote) and TRAINING_WRAPPERS (one live trainingModel per module).
"""
from __future__ import annotations

import contextlib
import copy
import weakref

import torch
from torch.utils.weak import WeakIdKeyDictionary

from ..errors import Error


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
        # the copy keeps each module's train/eval flag as at compile, as PopTorch's graph does
        self.copy = copy.deepcopy(host) if keep_copy else None
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

    def upload_buffers(self, names: list[str]) -> None:
        """Copy only the named host buffers to the device copy (copyNamedBuffersToDevice)."""
        if self.copy is None:
            return  # a training model runs the host module itself
        host, device = dict(self.host.named_buffers()), dict(self.copy.named_buffers())
        with torch.no_grad():
            for name in names:
                device[name].copy_(host[name])

    def download(self) -> None:
        if self.copy is not None:
            self.host.load_state_dict(self.copy.state_dict())


class TrainingWrappers:
    """Each module's live training wrapper: PopTorch allows one per module at a time.

    While wrapped, the module has PopTorch's `destroy()` (it frees its wrapper): as PopTorch
    does, its class becomes a subclass of its own with that method, which copies and pickles
    as the original class and is undone by `destroy()`.
    """

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        # module -> weak reference to its wrapper: a strong value would keep the module alive
        self.by_module: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def check_free(self, module: torch.nn.Module) -> None:
        """Raise RuntimeError if a live training wrapper already trains the module."""
        if self.wrapper_of(module) is not None:
            raise RuntimeError("Model has already been wrapped in 'poptorch.trainingModel'. Call "
                               "model.destroy() on the model to unwrap before wrapping again.")

    def wrapper_of(self, module: torch.nn.Module):
        current = self.by_module.get(module)
        return None if current is None else current()

    def claim(self, module: torch.nn.Module, wrapper) -> None:
        """Record `wrapper` as the module's training wrapper (after check_free)."""
        self.by_module[module] = weakref.ref(wrapper)
        _SET_CLASS(module, _destroyable(type(module)))

    def release(self, module: torch.nn.Module, wrapper) -> None:
        if self.wrapper_of(module) is wrapper:
            del self.by_module[module]
            _SET_CLASS(module, _unwrapped(type(module)))


TRAINING_WRAPPERS = TrainingWrappers()
_DESTROYABLE: dict[type, type] = {}  # a module class -> its subclass with destroy()
_SET_CLASS = object.__dict__["__class__"].__set__  # sets a class past a `__class__` property


def _unwrapped(cls: type) -> type:
    return cls.__bases__[0] if cls in _DESTROYABLE.values() else cls


def _destroyable(cls: type) -> type:
    """`cls` with PopTorch's destroy(), named as `cls` (so reprs and logs are unchanged)."""
    cls = _unwrapped(cls)
    if cls not in _DESTROYABLE:
        def destroy(self) -> None:
            """Destroy the training wrapper of this model (PopTorch's model.destroy())."""
            wrapper = TRAINING_WRAPPERS.wrapper_of(self)
            if wrapper is not None:
                wrapper.destroy()

        def __reduce_ex__(self, protocol):  # copies and pickles are of the original class
            wrapped = type(self)
            _SET_CLASS(self, cls)
            try:
                return self.__reduce_ex__(protocol)
            finally:
                _SET_CLASS(self, wrapped)

        _DESTROYABLE[cls] = type(cls.__name__, (cls,), {
            "destroy": destroy, "__reduce_ex__": __reduce_ex__,
            "__class__": property(lambda self: cls),  # what pickle checks a reduction against
            "__qualname__": cls.__qualname__, "__module__": cls.__module__})
    return _DESTROYABLE[cls]


@contextlib.contextmanager
def in_modes(modes: dict[torch.nn.Module, bool]):
    """Run with each module's train/eval flag as it was at compile; leave the user's flags as
    they are (PopTorch compiles a copy of the model, so model.train()/eval() made later do not
    reach the compiled graph)."""
    saved = {module: module.training for module in modes}
    for module, training in modes.items():
        module.training = training
    try:
        yield
    finally:
        for module, training in saved.items():
            module.training = training


def buffer_ids(model: torch.nn.Module) -> dict[str, int]:
    return {name: id(buffer) for name, buffer in model.named_buffers()}


def check_buffers_kept(before: dict[str, int], model: torch.nn.Module) -> None:
    """PopTorch compiles buffers as device tensors: forward may update them in place only.

    Raises:
        Error: a buffer was removed or reassigned by the forward pass.
    """
    after = buffer_ids(model)
    for name, identity in before.items():
        if name not in after:
            raise Error(f"Buffer {name} is removed from the model when calling the forward "
                        f"method. Keep it registered: PopTorch compiles buffers into the graph.")
        if after[name] != identity:
            raise Error(f"Buffer {name} is reassigned within the model when calling the forward "
                        f"method. This is not supported. Consider using self.{name}.copy_(src) "
                        f"to copy data from a source tensor, where src is the name of the "
                        f"source tensor.")
