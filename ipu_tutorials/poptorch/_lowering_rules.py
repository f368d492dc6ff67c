"""Calls PopTorch cannot lower to the IPU, refused while a model compiles, in PopTorch's words.

The simulator runs every op with PyTorch, so these would run; PopTorch's compiler refuses them
(its op handlers, popart_canonicalization/*.cpp), and code that compiles here must compile there.
"""
from __future__ import annotations

import contextlib

import torch
from torch._subclasses.fake_tensor import DynamicOutputShapeException
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten

from ..errors import Error

# interpolate modes PopTorch has no lowering for, and the ATen op it names in its message
_UNSUPPORTED_UPSAMPLE = {"linear": "aten::upsample_linear1d",
                         "trilinear": "aten::upsample_trilinear3d"}


def _one_hot(tensor, num_classes=-1):
    if num_classes == -1:  # the class count would come from the data: not a static graph
        raise Error("OneHot num classes must be specified and must be constant.")


def _interpolate(input, size=None, scale_factor=None, mode="nearest", *args, **kwargs):
    if mode in _UNSUPPORTED_UPSAMPLE:
        raise Error(f"Unsupported upsample mode {_UNSUPPORTED_UPSAMPLE[mode]}: currently only "
                    f"'nearest' is supported")


def _bincount(input, weights=None, minlength=0):
    if minlength <= 0:  # the output's length would come from the data
        raise Error("Bincount `minlength` must be specified and must be a constant. On the IPU MK2 "
                    "platform the minimum length is also the maximum length")


class DynamicShapeError(Error, DynamicOutputShapeException):
    """An op whose output shape depends on tensor values; also torch's exception, which
    PopTorch raises for it."""

    def __init__(self, func, message: str):
        Error.__init__(self, message)
        self.func = func

    def __str__(self) -> str:
        return self.args[0]


def _getitem(tensor, index):
    masks = [i for i in tree_flatten(index)[0]
             if isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8)]
    if masks:
        raise DynamicShapeError(torch.ops.aten.index.Tensor,
                                "indexing with a boolean mask gives an output whose shape depends "
                                "on the mask's values, and the IPU's graph is static: keep the "
                                "shape with torch.where(mask, x, 0) or x * mask instead")


_RULES = {torch.Tensor.__getitem__: _getitem, torch.nn.functional.one_hot: _one_hot,
          torch.nn.functional.interpolate: _interpolate, torch.bincount: _bincount,
          torch.Tensor.bincount: _bincount}


class _Refusals(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        rule = _RULES.get(func)
        if rule is not None:
            rule(*args, **kwargs)
        return func(*args, **kwargs)


@contextlib.contextmanager
def checking():
    """Refuse the calls PopTorch cannot lower while the model's forward pass is captured."""
    with _Refusals():
        yield
