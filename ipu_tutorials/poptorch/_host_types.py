"""What crosses the host boundary: inputs lose requires_grad, 64-bit outputs come back in 32 bits.

The IPU has no 64-bit types: PopTorch runs int64 and float64 tensors as int32 and float32 and
returns its outputs in those types (its type_support_test and bool_support_test check this).
"""
from __future__ import annotations

import torch
from torch.utils._pytree import tree_map

from ._logging import logger

_ON_THE_IPU = {torch.int64: torch.int32, torch.float64: torch.float32}


def ipu_dtype(dtype: torch.dtype) -> torch.dtype:
    """The type a tensor of this type has on the IPU."""
    return _ON_THE_IPU.get(dtype, dtype)


def detach_inputs(tree, warn: bool):
    """The inputs with requires_grad detached: the backward pass does not flow into inputs.
    PopTorch logs a warning for each such input when it compiles (the first call)."""
    def detach(x):
        if not (isinstance(x, torch.Tensor) and x.requires_grad):
            return x
        if warn:
            logger.warning("Input tensor has requires_grad=True set. This tensor will be detached "
                           "because backward pass via inputs is not supported.")
        return x.detach()
    return tree_map(detach, tree)


def ipu_output_types(tree):
    """The outputs in the types the IPU computed them in: int64 as int32, float64 as float32."""
    def demote(x):
        if isinstance(x, torch.Tensor) and x.dtype in _ON_THE_IPU:
            return x.to(ipu_dtype(x.dtype))
        return x
    return tree_map(demote, tree)
