"""The optimizer update run slice by slice: the same arithmetic in a fraction of the memory traffic.

An optimizer's update is a chain of ~20 elementwise float32 operations per weight. Run on a
whole weight of millions of elements, every operation streams fresh tensors through main memory
(the mixed-precision tutorial's 4.2M-weight linear layer: ~70 MB of temporaries per step). Run on
slices of SLICE elements, the temporaries stay in the core's cache and are reused step after step.
Every operation is elementwise, so each element goes through exactly the same float32 operations
and roundings as in the whole-tensor update (the reference, `Optimizer._apply_per_tensor`);
tests/poptorch/test_sliced_update.py holds the two to the same bits.

The slices run on one thread: with several, every one of their many small operations would
fork and join torch's thread pool, and on a machine shared with other processes each join waits
for a time slice (measured: 13x slower than the whole-tensor update with 2 threads at load 13).

Not sliced: rules that look at a whole tensor (LAMB's trust ratio), non-contiguous weights or
state, and updates watched by a dispatch mode (the float16 emulation with stochastic rounding
draws one random number per element in whole-tensor order).
"""
from __future__ import annotations

import math
from typing import Callable

import torch

from ..support.threads import one_thread

# 64Ki float32 elements = 256 KiB per temporary: an update's handful of live temporaries fit
# a core's L2 cache (1 MiB on the AMD EPYC we measure on); smaller slices pay more Python calls.
SLICE = 1 << 16


def can_slice(optimizer) -> bool:
    """Whether this update may run in slices (see the module docstring).

    Only an `_update` this package wrote and marked elementwise is sliced: a user's subclass
    that overrides `_update` runs on whole tensors unless it sets `_elementwise = True` itself.
    """
    return _declared_elementwise(type(optimizer)) and not torch._C._len_torch_dispatch_stack()


def _declared_elementwise(cls: type) -> bool:
    """Whether the class that defines the `_update` in use declares it elementwise: itself,
    or, for this package's optimizers, through the flag they inherit."""
    owner = next(c for c in cls.__mro__ if "_update" in vars(c))
    if "_elementwise" in vars(owner):
        return vars(owner)["_elementwise"]
    return owner.__module__ == f"{__package__}.optim" and owner._elementwise


def clip_factor(optimizer, grads: dict, scale: float) -> float | None:
    """max_grad_norm's factor, from the norm of all the scaled gradients (None: no clipping).

    Computed as the whole-tensor update computes it, in the same order, so it has the same bits.
    """
    if not (math.isfinite(optimizer._max_grad_norm) and grads):
        return None
    norm = torch.sqrt(sum((g.float() * scale).pow(2).sum() for g in grads.values()))
    return optimizer._max_grad_norm / max(optimizer._max_grad_norm, norm.item())


def _pieces(tensors: list[torch.Tensor]) -> list[Callable[[torch.Tensor], torch.Tensor] | None]:
    """Functions that cut a tensor into the slices of the update (None: the whole tensor)."""
    if not all(t.is_contiguous() for t in tensors):
        return [None]
    return [lambda t, start=start: t.view(-1)[start:start + SLICE]
            for start in range(0, tensors[0].numel(), SLICE)]


def apply_sliced(optimizer, grads: dict, scale: float) -> None:
    """The update of `Optimizer.apply_gradients`, slice by slice (same bits)."""
    factor = clip_factor(optimizer, grads, scale)
    with one_thread():  # elementwise results do not depend on it
        _apply_slices(optimizer, grads, scale, factor)


def _apply_slices(optimizer, grads: dict, scale: float, factor: float | None) -> None:
    for group in optimizer.param_groups:
        for p in group["params"]:
            if p not in grads:
                continue
            state = optimizer._state_for(p, group)
            state["step"] = int(state.get("step", 0)) + 1  # load_state_dict makes it a float tensor
            names = optimizer._group_state_tensors(group)
            weight, grad = p.detach(), grads[p]
            for piece in _pieces([weight, grad] + [state[n] for n in names]):
                _update_piece(optimizer, group, weight, grad, state, names, piece, scale, factor)


def _update_piece(optimizer, group: dict, weight, grad, state: dict, names, piece,
                  scale: float, factor: float | None) -> None:
    """One slice of the update (piece None: the whole weight, exactly as the reference)."""
    cut = piece or (lambda t: t)
    g = cut(grad).float() * scale
    if factor is not None:
        g = g * factor
    if group.get("maximize"):
        g = -g
    views = {name: piece(state[name]) for name in names} if piece else {}
    local = {**state, **views} if piece else state
    new = optimizer._update(cut(weight).float(), g, local, group)
    for name, view in views.items():
        if local[name] is not view:  # _store put a new tensor there
            view.copy_(local[name])
    cut(weight).copy_(new.to(weight.dtype))
