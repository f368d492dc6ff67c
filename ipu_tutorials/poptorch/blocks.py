"""Block annotations: Block, BeginBlock, BlockFunction, removeBlocks, module_repr.

They mark which block each op of the model belongs to. Outside a capture they do nothing,
so an annotated model still runs as plain PyTorch on the CPU.
"""
from __future__ import annotations

import functools

import torch

from ..errors import Error
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


class Block(torch.nn.Module):
    """Ops run inside `with poptorch.Block("B1", ipu_id=0):` belong to block "B1".

    A torch.nn.Module, as PopTorch's (it has no forward), keeping the annotation in
    PopTorch's private `_user_id` and `_ipu_id`.
    """

    def __init__(self, user_id: str | None = None, ipu_id: int | None = None):
        _check_ids("poptorch.Block", user_id, ipu_id)
        super().__init__()
        self._user_id, self._ipu_id = user_id, ipu_id
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

    def __enter__(self) -> None:  # as PopTorch's: `with Block(...) as b` gives None
        if tracing.STATE.capture is not None:
            self._previous = tracing.enter_block(_block_name(self._user_id), self._ipu_id)

    def __exit__(self, type, value, traceback) -> None:  # noqa: A002 (PopTorch's names)
        if tracing.STATE.capture is not None:
            tracing.restore_block(self._previous)


class _BlockHook:
    """The forward pre-hook BeginBlock installs; its repr shows the annotation."""

    def __init__(self, user_id, ipu_id):
        self._user_id, self._ipu_id = user_id, ipu_id

    def __setstate__(self, state: dict) -> None:
        """A hook saved with a model before it kept PopTorch's private names."""
        self._user_id = state.get("_user_id", state.get("user_id"))
        self._ipu_id = state.get("_ipu_id", state.get("ipu_id"))

    def __call__(self, module, inputs):
        if tracing.STATE.capture is not None:
            tracing.enter_block(_block_name(self._user_id), self._ipu_id)

    def __repr__(self):
        return f"BeginBlock(user_id={self._user_id!r}, ipu_id={self._ipu_id!r})"


def BeginBlock(layer_to_call, user_id: str | int | None = None, ipu_id: int | None = None):
    """Start a block at `layer_to_call`: it and everything run after it belong to the block.

    Returns the layer, so `self.fc = poptorch.BeginBlock(nn.Linear(4, 4), "B2", ipu_id=1)` works.

    Raises:
        poptorch.Error: the layer is neither a module nor a function, or already begins a
            block (as PopTorch raises them).
    """
    _check_ids("poptorch.BeginBlock", user_id, ipu_id)
    if not isinstance(layer_to_call, torch.nn.Module):
        if callable(layer_to_call):
            return _BlockStart(layer_to_call, user_id, ipu_id)
        raise Error(f"module is not an instance of torch.nn.Module or function: "
                    f"poptorch.BeginBlock got {type(layer_to_call).__name__}")
    existing = _block_hooks(layer_to_call)
    if existing:
        raise Error(f"module has already been assigned to a block: this "
                    f"{type(layer_to_call).__name__} already begins one ({existing[0]!r}). Call "
                    f"poptorch.removeBlocks(module) first to re-annotate it.")
    layer_to_call.register_forward_pre_hook(_BlockHook(user_id, ipu_id))
    return layer_to_call


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


def removeBlocks(module: torch.nn.Module) -> None:
    """Remove every BeginBlock annotation from `module` and its submodules (in place; None is
    returned, as PopTorch's).

    Raises:
        AssertionError: `module` is not a torch.nn.Module (PopTorch asserts).
    """
    assert isinstance(module, torch.nn.Module), (
        f"poptorch.removeBlocks expects a torch.nn.Module, got {type(module).__name__}")
    for sub in module.modules():
        for key in [k for k, h in sub._forward_pre_hooks.items() if isinstance(h, _BlockHook)]:
            del sub._forward_pre_hooks[key]


def _block_hooks(module: torch.nn.Module) -> list[_BlockHook]:
    return [h for h in module._forward_pre_hooks.values() if isinstance(h, _BlockHook)]


def module_repr(m: torch.nn.Module) -> str:
    """repr(m) with each BeginBlock annotation written before the module it starts.

    torch's own repr does not show forward pre-hooks, so the blocks would be invisible.
    """
    module = m
    extra = module.extra_repr()
    extra_lines = extra.split("\n") if extra else []
    child_lines = [f"({name}): " + module_repr(child).replace("\n", "\n  ")
                   for name, child in module._modules.items() if child is not None]
    head = "".join(f"{hook!r} " for hook in _block_hooks(module)) + module._get_name() + "("
    if len(extra_lines) == 1 and not child_lines:
        return head + extra_lines[0] + ")"
    lines = extra_lines + child_lines
    return head + ("\n  " + "\n  ".join(lines) + "\n" if lines else "") + ")"
