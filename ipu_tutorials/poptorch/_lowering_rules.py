"""Calls PopTorch cannot lower to the IPU, refused while a model compiles, in PopTorch's words.

The simulator runs every op with PyTorch, so these would run; PopTorch's compiler refuses them
(its op handlers, popart_canonicalization/*.cpp), and code that compiles here must compile there.
"""
from __future__ import annotations

import contextlib
import weakref

import torch
from torch._subclasses.fake_tensor import DynamicOutputShapeException
from torch._ops import OpOverload
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
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
    def __init__(self):
        super().__init__()
        self.in_call = False  # inside a torch API call: a tensor made now is made by an op
        self.host_made = weakref.WeakValueDictionary()  # id -> tensor, see _HostConstructors

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        rule = _RULES.get(func)
        if rule is not None:
            rule(*args, **kwargs)
        if self.host_made:
            _refuse_host_tensors(self.host_made, (args, kwargs))
        # aten ops come here too when a dispatch mode (the simulator's capture) runs them
        saved, self.in_call = self.in_call, self.in_call or not isinstance(func, OpOverload)
        try:
            return func(*args, **kwargs)
        finally:
            self.in_call = saved


class _HostConstructors(TorchDispatchMode):
    """Notes the tensors the legacy constructors make (torch.LongTensor([1, 0]),
    torch.Tensor([...])). They are no torch function, so PopTorch's dispatcher never sees them
    made and they stay on the CPU, while factories (torch.tensor, torch.ones) trace onto the IPU.
    Torch functions do not see them either; only their aten.lift_fresh call shows them."""

    def __init__(self, refusals: _Refusals):
        super().__init__()
        self.refusals = refusals

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func is torch.ops.aten.lift_fresh.default and not self.refusals.in_call:
            self.refusals.host_made[id(out)] = out
        return out


def _refuse_host_tensors(host_made: weakref.WeakValueDictionary, inputs) -> None:
    for tensor in tree_flatten(inputs)[0]:
        if isinstance(tensor, torch.Tensor) and host_made.get(id(tensor)) is tensor:
            kind = tensor.type().removeprefix("torch.").removesuffix("Tensor")
            raise Error(f"Expected an IPU tensor but got tensor(device={tensor.device}, shape="
                        f"{list(tensor.shape)}, dtype={kind}). A legacy constructor such as "
                        f"torch.{kind}Tensor(...), or torch.from_numpy, makes a CPU tensor that "
                        f"PopTorch does not trace: make the constant with "
                        f"torch.tensor(..., dtype=...) instead")


@contextlib.contextmanager
def checking():
    """Refuse the calls PopTorch cannot lower while the model's forward pass is captured."""
    refusals = _Refusals()
    with refusals, _HostConstructors(refusals):
        yield
