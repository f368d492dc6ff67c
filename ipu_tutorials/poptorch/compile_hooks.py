"""Functions PopTorch calls just before and just after it compiles any model."""
from __future__ import annotations

import collections
from typing import Callable

from torch.utils.hooks import RemovableHandle

_PRE_COMPILE: collections.OrderedDict[int, Callable[[], None]] = collections.OrderedDict()
_POST_COMPILE: collections.OrderedDict[int, Callable[[], None]] = collections.OrderedDict()


def _register(hooks: collections.OrderedDict, hook: Callable[[], None]) -> RemovableHandle:
    if not callable(hook):
        raise RuntimeError(f"a compile hook must be callable (a function taking no arguments), "
                           f"got {type(hook).__name__}")
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle


def registerPreCompileHook(hook: Callable[[], None]) -> RemovableHandle:  # noqa: N802
    """Call `hook()` before every compilation, in registration order.

    Returns:
        a handle whose `remove()` unregisters the hook.

    Raises:
        RuntimeError: `hook` is not callable.
    """
    return _register(_PRE_COMPILE, hook)


def registerPostCompileHook(hook: Callable[[], None]) -> RemovableHandle:  # noqa: N802
    """Call `hook()` after every compilation, in registration order (see registerPreCompileHook)."""
    return _register(_POST_COMPILE, hook)


def run_pre_compile_hooks() -> None:
    for hook in list(_PRE_COMPILE.values()):
        hook()


def run_post_compile_hooks() -> None:
    for hook in list(_POST_COMPILE.values()):
        hook()
