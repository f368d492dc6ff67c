"""poptorch.CPU: a host function called from the middle of a model running on the IPU."""
from __future__ import annotations

from typing import Callable

import torch
from torch.utils._pytree import tree_map


def _is_meta(value) -> bool:
    return isinstance(value, torch.Tensor) and value.is_meta


def _on_host(value):
    return torch.zeros(value.shape, dtype=value.dtype) if _is_meta(value) else value


class CPU:
    """Run `layer_to_call` on the host whenever the model calls this wrapper.

    On real IPUs the inputs stream to the host, the function runs there, and its outputs stream
    back (PopTorch supports this in inference models). The simulator runs every op on the host
    anyway, so the call is direct; its work is counted as IPU work, with no host round trip.

    Args:
        layer_to_call: the function or module to run; a module's parameters are frozen, as
            PopTorch does (the host op has no backward pass).
        ID: the op's name.

    Raises:
        TypeError: `layer_to_call` is not callable or `ID` is not a string.
    """

    def __init__(self, layer_to_call: Callable, ID: str):  # noqa: N803 (PopTorch's name)
        if not callable(layer_to_call):
            raise TypeError(f"poptorch.CPU(layer_to_call=...) takes a function or a module, got "
                            f"{type(layer_to_call).__name__}")
        if not isinstance(ID, str):
            raise TypeError(f"poptorch.CPU(..., ID=...) takes the op's name as a string, got "
                            f"{type(ID).__name__}")
        if isinstance(layer_to_call, torch.nn.Module):
            layer_to_call.requires_grad_(False)
        self._layer_to_call = layer_to_call
        self._ID = ID

    def __call__(self, *input, **kwargs):  # noqa: A002 (PopTorch's names)
        args = input
        if kwargs:
            raise TypeError(f"poptorch.CPU({self._ID!r}): pass the op's inputs by position")
        if not any(_is_meta(a) for a in args):
            return self._layer_to_call(*args)
        # Compilation traces with shape-only (meta) tensors; the host function still gets CPU
        # tensors of the right shapes, as PopTorch's host buffers are, and its outputs go back
        # into the trace as shapes.
        outputs = self._layer_to_call(*[_on_host(a) for a in args])
        return tree_map(lambda t: t.to("meta") if isinstance(t, torch.Tensor) else t, outputs)

    def __repr__(self) -> str:
        return f"poptorch.CPU({self._ID!r})"
