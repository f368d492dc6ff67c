"""Ops whose inputs mix float16 and float32, typed and cast as PopTorch 3.x does.

PopTorch's dispatcher gives each ATen op the result type PyTorch's meta kernels give it
(dispatch_tracer/TypeInferenceHandler.cpp), after PyTorch's own decomposition, and lowers it:

- a convolution or normalisation casts its weight and bias to its input's type
  (popart_canonicalization, castWeightAndBias: PopTorch 3.0's "Fix convolution typing");
- a matrix product computes in float32 (PopART promotes its inputs) and takes the meta
  kernel's type: the activation's (mm, bmm, matmul), except where a float32 bias is added out
  of place. torch 2.0.1 (PopTorch 3.4's) lowers nn.Linear with a bias to addmm for a 2-D input
  and for a contiguous 3-D one (flattened to 2-D), and its meta addmm is the Python
  decomposition that promotes (torch/_decomp/decompositions.py, `addmm` under
  `pw_cast_for_opmath`, made the Meta kernel by torch/_meta_registrations.py's
  activate_meta): float32. Other inputs take matmul and an in-place bias add: float16;
- every other op promotes as PyTorch does (float32), so it needs nothing here.

PopTorch's own tests hold it to this (half_float_test.py: float16 activations into float32
Conv1d weights, and into a float32 Linear on a 1-D input, give float16; half_test.py:
test_8bit_io_casting). No PopTorch test covers the addmm inputs: their float32 is read from
the sources above, not run on an IPU. The casts are made above autograd, as they are nodes of
PopTorch's graph: gradients flow back through them, so a float32 weight's gradient stays
float32.
"""
from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import _disable_current_modes

HALF, FLOAT = torch.float16, torch.float32
F = torch.nn.functional

_CONVOLUTIONS = (F.conv1d, F.conv2d, F.conv3d, F.conv_transpose1d, F.conv_transpose2d,
                 F.conv_transpose3d)
# function -> (position, keyword) of the weight and of the bias it casts to the input's type
_CASTS = {**dict.fromkeys(_CONVOLUTIONS, ((1, "weight"), (2, "bias"))),
          F.batch_norm: ((3, "weight"), (4, "bias")), F.instance_norm: ((3, "weight"), (4, "bias")),
          F.layer_norm: ((2, "weight"), (3, "bias")), F.group_norm: ((2, "weight"), (3, "bias"))}
_PRODUCTS = {torch.matmul, torch.mm, torch.bmm, torch.mv, torch.addmm, torch.baddbmm,
             torch.addbmm, torch.addmv, torch.Tensor.matmul, torch.Tensor.__matmul__,
             torch.Tensor.__rmatmul__, torch.Tensor.mm, torch.Tensor.bmm, torch.Tensor.mv}
_RESULT_TYPES: dict[tuple, torch.dtype] = {}  # (op, argument types and ranks) -> result type


def _tensors(args, kwargs) -> list[torch.Tensor]:
    return [x for x in (*args, *kwargs.values()) if isinstance(x, torch.Tensor)]


def _mixed(tensors: list[torch.Tensor]) -> bool:
    types = {t.dtype for t in tensors}
    return HALF in types and FLOAT in types


def _cast_weights(func, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """The weight and bias in the input's type (the input is the first argument)."""
    args, kwargs, dtype = list(args), dict(kwargs), args[0].dtype
    for position, name in _CASTS[func]:
        if position < len(args) and isinstance(args[position], torch.Tensor):
            args[position] = args[position].to(dtype)
        elif isinstance(kwargs.get(name), torch.Tensor):
            kwargs[name] = kwargs[name].to(dtype)
    return tuple(args), kwargs


def _result_type(func, args: tuple, kwargs: dict) -> torch.dtype:
    """The meta kernel's result type; F.linear as torch 2.0.1 decomposes it in C++ (addmm for a
    2-D or contiguous 3-D input with a bias, else matmul and an in-place bias add)."""
    if func is F.linear:
        bias = args[2] if len(args) > 2 else kwargs.get("bias")
        x = args[0]
        if bias is not None and (x.dim() == 2 or (x.dim() == 3 and x.is_contiguous())):
            return torch.promote_types(torch.promote_types(x.dtype, args[1].dtype), bias.dtype)
        return x.dtype
    key = (func, *((t.dtype, t.dim()) for t in _tensors(args, kwargs)))
    if key not in _RESULT_TYPES:
        def meta(x):
            return (torch.empty(x.shape, dtype=x.dtype, device="meta")
                    if isinstance(x, torch.Tensor) else x)
        with _disable_current_modes():  # a question about types, not an op of the model
            result = func(*map(meta, args), **{k: meta(v) for k, v in kwargs.items()})
            _RESULT_TYPES[key] = result.dtype
    return _RESULT_TYPES[key]


def _up(x):
    return x.float() if isinstance(x, torch.Tensor) and x.dtype == HALF else x


class MixedTypes(TorchFunctionMode):
    """Active while a model is captured, and while it runs if the capture saw it act (`used`)."""

    def __init__(self):
        super().__init__()
        self.used = False

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if (func in _CASTS and args and isinstance(args[0], torch.Tensor)
                and args[0].is_floating_point() and _mixed(_tensors(args, kwargs))):
            self.used = True
            cast_args, cast_kwargs = _cast_weights(func, args, kwargs)
            return func(*cast_args, **cast_kwargs)
        if (func in _PRODUCTS or func is F.linear) and _mixed(_tensors(args, kwargs)):
            self.used = True
            wanted = _result_type(func, args, kwargs)
            out = func(*map(_up, args), **{k: _up(v) for k, v in kwargs.items()})
            return out.to(wanted)
        return func(*args, **kwargs)
