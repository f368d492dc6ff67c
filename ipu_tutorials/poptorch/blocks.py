"""Block annotations: Block, BeginBlock, BlockFunction, removeBlocks, module_repr.

They mark which block each op of the model belongs to. Outside a capture they do nothing,
so an annotated model still runs as plain PyTorch on the CPU.
"""
from __future__ import annotations

import functools

import torch

from ._to_simulator import tracing
from ._checks import check_int


def _check_ids(where: str, user_id, ipu_id):
    # PopTorch annotates user_id as a str, and its own tests pass ints: both name a block
    if user_id is not None and (isinstance(user_id, bool) or not isinstance(user_id, (str, int))):
        raise TypeError(f"{where}: user_id must be a string such as \"B1\" or an int (or None "
                        f"for an automatic id), got {type(user_id).__name__} {user_id!r}")
    if ipu_id is not None:
        check_int(f"{where}: ipu_id", ipu_id, minimum=0)


def _block_name(user_id: str | int | None) -> str | None:
    """The block's name in plans and messages: an int id 1 names block "1"."""
    return None if user_id is None else str(user_id)


class Block:
    """Ops run inside `with poptorch.Block("B1", ipu_id=0):` belong to block "B1"."""

    def __init__(self, user_id: str | None = None, ipu_id: int | None = None):
        _check_ids("poptorch.Block", user_id, ipu_id)
        self.user_id, self.ipu_id = user_id, ipu_id
        self._previous = None

    @staticmethod
    def useAutoId():
        """Number the id-less blocks of each forward pass "0", "1", ... from here."""
        tracing.STATE.next_auto_id = 0

    @staticmethod
    def start(user_id: str | None = None, ipu_id: int | None = None):
        """Begin a block that lasts until the next one begins."""
        _check_ids("poptorch.Block.start", user_id, ipu_id)
        if tracing.STATE.capture is not None:
            tracing.enter_block(_block_name(user_id), ipu_id)

    def __enter__(self):
        if tracing.STATE.capture is not None:
            self._previous = tracing.enter_block(_block_name(self.user_id), self.ipu_id)
        return self

    def __exit__(self, *exc):
        if tracing.STATE.capture is not None:
            tracing.restore_block(self._previous)
        return False


class _BlockHook:
    """The forward pre-hook BeginBlock installs; its repr shows the annotation."""

    def __init__(self, user_id, ipu_id):
        self.user_id, self.ipu_id = user_id, ipu_id

    def __call__(self, module, inputs):
        if tracing.STATE.capture is not None:
            tracing.enter_block(_block_name(self.user_id), self.ipu_id)

    def __repr__(self):
        return f"BeginBlock(user_id={self.user_id!r}, ipu_id={self.ipu_id!r})"


def BeginBlock(layer, user_id: str | int | None = None, ipu_id: int | None = None):
    """Start a block at `layer`: it and everything run after it belong to the block.

    Returns the layer, so `self.fc = poptorch.BeginBlock(nn.Linear(4, 4), "B2", ipu_id=1)` works.
    """
    _check_ids("poptorch.BeginBlock", user_id, ipu_id)
    if not isinstance(layer, torch.nn.Module):
        if callable(layer):
            return _BlockStart(layer, user_id, ipu_id)
        raise TypeError(f"poptorch.BeginBlock expects a torch.nn.Module (or a function), "
                        f"got {type(layer).__name__}")
    existing = _block_hooks(layer)
    if existing:
        raise ValueError(f"this {type(layer).__name__} already begins a block ({existing[0]!r}); "
                         f"a module can begin only one block. Call poptorch.removeBlocks(module) "
                         f"first to re-annotate it.")
    layer.register_forward_pre_hook(_BlockHook(user_id, ipu_id))
    return layer


class _BlockStart:
    """A function that starts a block when called; the block outlasts the call.

    An object, not a closure, so that it pickles with the model (torch.save); `_user_id` and
    `_ipu_id` are PopTorch's attribute names for the annotation.
    """

    def __init__(self, function, user_id, ipu_id):
        functools.update_wrapper(self, function)
        self._function, self._user_id, self._ipu_id = function, user_id, ipu_id

    def __call__(self, *args, **kwargs):
        Block.start(self._user_id, self._ipu_id)
        return self._function(*args, **kwargs)


def BlockFunction(user_id: str | None = None, ipu_id: int | None = None):
    """Decorator: the function's ops belong to the block (like wrapping its body in Block)."""
    _check_ids("poptorch.BlockFunction", user_id, ipu_id)

    def decorator(function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            with Block(user_id, ipu_id):
                return function(*args, **kwargs)
        return wrapper
    return decorator


def removeBlocks(module: torch.nn.Module) -> torch.nn.Module:
    """Remove every BeginBlock annotation from `module` and its submodules."""
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"poptorch.removeBlocks expects a torch.nn.Module, got {type(module).__name__}")
    for sub in module.modules():
        for key in [k for k, h in sub._forward_pre_hooks.items() if isinstance(h, _BlockHook)]:
            del sub._forward_pre_hooks[key]
    return module


def _block_hooks(module: torch.nn.Module) -> list[_BlockHook]:
    return [h for h in module._forward_pre_hooks.values() if isinstance(h, _BlockHook)]


def module_repr(module: torch.nn.Module) -> str:
    """repr(module) with each BeginBlock annotation written before the module it starts.

    torch's own repr does not show forward pre-hooks, so the blocks would be invisible.
    """
    extra = module.extra_repr()
    extra_lines = extra.split("\n") if extra else []
    child_lines = [f"({name}): " + module_repr(child).replace("\n", "\n  ")
                   for name, child in module._modules.items() if child is not None]
    head = "".join(f"{hook!r} " for hook in _block_hooks(module)) + module._get_name() + "("
    if len(extra_lines) == 1 and not child_lines:
        return head + extra_lines[0] + ")"
    lines = extra_lines + child_lines
    return head + ("\n  " + "\n  ".join(lines) + "\n" if lines else "") + ")"
