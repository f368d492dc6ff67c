"""poptorch.optim: SGD, Adam, AdamW, RMSprop and LAMB with IPU-style precision controls.

Each optimizer does its arithmetic in float32 and keeps its state in the declared accumulation
types (float32 by default), writing weights back in their own type, as PopART's updates do
(`_optimizer_base.py`). With float32 weights the result equals torch.optim's to rounding. Loss
scaling is undone inside the update, in float32, so scaled gradients never round to zero on
the way.
"""
from __future__ import annotations

import math
import warnings

import torch

from ._optimizer_base import Optimizer, _HostStep, _check_positive, _given, _moment_types
from ._variable_attributes import VariableAttributes

class SGD(Optimizer, _HostStep, torch.optim.SGD):
    """Stochastic gradient descent with optional momentum, dampening and weight decay.

    velocity_scaling keeps the stored velocity multiplied by a constant so that it does not
    underflow in float16; PopTorch honours it with use_combined_accum=True. That variant keeps
    one tensor per weight for both the accumulated gradients and the velocity, and PopTorch
    ignores accum_type and velocity_accum_type for it (python/optim.py; CompilerImpl.cpp passes
    PopART no type): here it takes the weight's type, and there is no optimizer state to place.
    """

    _flops_per_param = 4

    # PopTorch's parameters: None takes torch's default (or PopTorch's, for its own)
    def __init__(self, params, lr: float, momentum: float | None = None,
                 dampening: float | None = None, weight_decay: float | None = None,
                 nesterov: bool | None = None, maximize: bool | None = None,
                 foreach: bool | None = None, differentiable: bool | None = None,
                 loss_scaling: float | None = None, velocity_scaling: float | None = None,
                 use_combined_accum: bool | None = None, accum_type=None,
                 velocity_accum_type=None, max_grad_norm: float | None = None):
        super().__init__(params, **_given(lr=lr, momentum=momentum, dampening=dampening,
                                          weight_decay=weight_decay, nesterov=nesterov,
                                          maximize=maximize, foreach=foreach,
                                          differentiable=differentiable))
        self._setup(loss_scaling, accum_type, max_grad_norm,
                    momentum_buffer=("velocity_accum_type", velocity_accum_type))
        self.use_combined_accum = bool(use_combined_accum)
        velocity_scaling = 1.0 if velocity_scaling is None else velocity_scaling
        _check_positive("velocity_scaling", velocity_scaling)
        if velocity_scaling != 1.0 and not use_combined_accum:
            warnings.warn("velocity_scaling is ignored unless use_combined_accum=True (PopTorch's "
                          "separate accumulator and velocity variant does not scale velocity)",
                          stacklevel=2)
        for group in self.param_groups:
            group.setdefault("velocity_scaling", velocity_scaling)
        self._state_tensors = ("momentum_buffer",) if any(
            g["momentum"] for g in self.param_groups) else ()

    def _group_state_tensors(self, group: dict) -> tuple[str, ...]:
        # a momentum that may change after compile needs its velocity from the start (PopART)
        velocity = group["momentum"] or not self.variable_attrs.isConstant("momentum")
        return ("momentum_buffer",) if velocity else ()

    @property
    def _accumulator_type(self) -> torch.dtype | None:
        """(Simulator) `accum_type`, or None (the weight's type) with the combined
        accumulator, for which PopTorch ignores `accum_type`."""
        return None if self.use_combined_accum else self.accum_type

    def _state_dtype(self, name: str, weight: torch.Tensor) -> torch.dtype:
        """(Simulator) the velocity's type: `velocity_accum_type`, or the weight's own type
        with the combined accumulator."""
        return weight.dtype if self.use_combined_accum else self._state_type(name)

    @property
    def _state_per_param(self) -> int:
        """(Simulator) 1 with momentum (the velocity), else 0; 0 with the combined
        accumulator, which is the gradient accumulator and no optimizer state besides it."""
        return 0 if self.use_combined_accum else len(self._state_tensors)

    def _update(self, w, g, state, group):
        if group["weight_decay"]:
            g = g + group["weight_decay"] * w
        momentum = group["momentum"]
        if "momentum_buffer" in state:
            scale = group["velocity_scaling"] if self.use_combined_accum else 1.0
            first = state["step"] == 1
            v = state["momentum_buffer"].float() / scale
            v = g.clone() if first else momentum * v + (1 - group["dampening"]) * g
            v = self._store(state, "momentum_buffer", v * scale) / scale
            g = g + momentum * v if group["nesterov"] else v
        return w - group["lr"] * g


class Adam(Optimizer, _HostStep, torch.optim.Adam):
    """Adam with L2 weight decay (added to the gradient), as torch.optim.Adam."""

    _state_tensors = ("exp_avg", "exp_avg_sq")
    _flops_per_param = 12
    _decoupled = False

    def __init__(self, params, lr: float | None = None, betas=None, eps: float | None = None,
                 weight_decay: float | None = None, amsgrad: bool | None = None,
                 foreach: bool | None = None, maximize: bool | None = None,
                 capturable: bool | None = None, differentiable: bool | None = None,
                 fused: bool | None = None, loss_scaling: float | None = None, accum_type=None,
                 first_order_momentum_accum_type=None, second_order_momentum_accum_type=None,
                 max_grad_norm: float | None = None):
        self._init_adam(params, _given(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                       amsgrad=amsgrad, foreach=foreach, maximize=maximize,
                                       capturable=capturable, differentiable=differentiable,
                                       fused=fused),
                        loss_scaling, accum_type, first_order_momentum_accum_type,
                        second_order_momentum_accum_type, max_grad_norm, bias_correction=None)

    def _init_adam(self, params, torch_args: dict, loss_scaling, accum_type, first, second,
                   max_grad_norm, bias_correction) -> None:
        """Adam's and AdamW's construction: torch's, then the IPU settings."""
        if torch_args.get("amsgrad"):
            raise ValueError(f"{type(self).__name__}(amsgrad=True) is not supported on the IPU; "
                             f"use amsgrad=False")
        # named, not super(): up to torch 2.6 Adam's constructor would run on into AdamW's
        (torch.optim.AdamW if self._decoupled else torch.optim.Adam).__init__(
            self, params, **torch_args)
        self._setup(loss_scaling, accum_type, max_grad_norm, **_moment_types(first, second))
        # Adam always corrects its moments' bias; PopTorch's AdamW may turn it off
        self._bias_correction = True if bias_correction is None else bool(bias_correction)

    def _update(self, w, g, state, group):
        lr, wd, (b1, b2), eps = group["lr"], group["weight_decay"], group["betas"], group["eps"]
        if self._decoupled:
            w = w * (1 - lr * wd)
        elif wd:
            g = g + wd * w
        m, v = self._moments(state, g, b1, b2)
        t = state["step"]
        bc1, bc2 = (1 - b1**t, 1 - b2**t) if self._bias_correction else (1.0, 1.0)
        return w - (lr / bc1) * m / (v.sqrt() / math.sqrt(bc2) + eps)


class AdamW(Adam, torch.optim.AdamW):
    """Adam with decoupled weight decay (default 0.01), as torch.optim.AdamW."""

    _decoupled = True

    def __init__(self, params, lr: float | None = None, betas=None, eps: float | None = None,
                 weight_decay: float | None = None, amsgrad: bool | None = None,
                 maximize: bool | None = None, foreach: bool | None = None,
                 capturable: bool | None = None, differentiable: bool | None = None,
                 fused: bool | None = None, loss_scaling: float | None = None,
                 bias_correction: bool | None = None, accum_type=None,
                 first_order_momentum_accum_type=None, second_order_momentum_accum_type=None,
                 max_grad_norm: float | None = None):
        self._init_adam(params, _given(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                       amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                                       capturable=capturable, differentiable=differentiable,
                                       fused=fused),
                        loss_scaling, accum_type, first_order_momentum_accum_type,
                        second_order_momentum_accum_type, max_grad_norm, bias_correction)
        self.bias_correction = self._bias_correction  # PopTorch's AdamW keeps it


class RMSprop(Optimizer, _HostStep, torch.optim.RMSprop):
    """RMSprop; use_tf_variant puts eps inside the square root, as TensorFlow does."""

    _clips = False
    _flops_per_param = 8

    def __init__(self, params, lr: float | None = None, alpha: float | None = None,
                 eps: float | None = None, weight_decay: float | None = None,
                 momentum: float | None = None, centered: bool | None = None,
                 foreach: bool | None = None, maximize: bool | None = None,
                 differentiable: bool | None = None, loss_scaling: float | None = None,
                 accum_type=None, first_order_momentum_accum_type=None,
                 second_order_momentum_accum_type=None, use_tf_variant: bool | None = None):
        super().__init__(params, **_given(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                          momentum=momentum, centered=centered, foreach=foreach,
                                          maximize=maximize, differentiable=differentiable))
        self._setup(loss_scaling, accum_type, None,  # PopTorch's RMSprop has no max_grad_norm
                    square_avg=("second_order_momentum_accum_type",
                                second_order_momentum_accum_type),
                    momentum_buffer=("first_order_momentum_accum_type",
                                     first_order_momentum_accum_type),
                    grad_avg=("first_order_momentum_accum_type", first_order_momentum_accum_type))
        self.use_tf_variant = bool(use_tf_variant)
        self._state_tensors = ("square_avg",) + (
            ("momentum_buffer",) if any(g["momentum"] for g in self.param_groups) else ()) + (
            ("grad_avg",) if any(g["centered"] for g in self.param_groups) else ())

    def _group_state_tensors(self, group: dict) -> tuple[str, ...]:
        return ("square_avg",) + (("momentum_buffer",) if group["momentum"] else ()) + (
            ("grad_avg",) if group["centered"] else ())

    def _update(self, w, g, state, group):
        alpha, eps = group["alpha"], group["eps"]
        if group["weight_decay"]:
            g = g + group["weight_decay"] * w
        sq = self._store(state, "square_avg", alpha * state["square_avg"].float() + (1 - alpha) * g * g)
        if group["centered"]:
            avg_g = self._store(state, "grad_avg", alpha * state["grad_avg"].float() + (1 - alpha) * g)
            sq = sq - avg_g * avg_g
        denom = (sq + eps).sqrt() if self.use_tf_variant else sq.sqrt() + eps
        if group["momentum"] > 0:
            buf = self._store(state, "momentum_buffer",
                              group["momentum"] * state["momentum_buffer"].float() + g / denom)
            return w - group["lr"] * buf
        return w - group["lr"] * g / denom


class LAMB(Optimizer, _HostStep, torch.optim.Optimizer):
    """Layer-wise adaptive moments (You et al., 2019): Adam's step scaled per weight tensor.

    u = m_hat / (sqrt(v_hat) + eps) + weight_decay * w;  w -= lr * min(|w|, max_weight_norm) / |u| * u,
    the trust ratio being 1 when either norm is 0. torch has no LAMB; this is PopTorch's rule.
    """

    _state_tensors = ("exp_avg", "exp_avg_sq")
    _clips = False
    _flops_per_param = 16
    _elementwise = False  # the trust ratio takes the norms of whole tensors

    def __init__(self, params, lr: float | None = None, betas=None, eps: float | None = None,
                 weight_decay: float | None = None, bias_correction: bool | None = None,
                 loss_scaling: float | None = None, max_weight_norm: float | None = None,
                 accum_type=None, first_order_momentum_accum_type=None,
                 second_order_momentum_accum_type=None):
        # PopTorch's defaults (python/optim.py: LAMB.__init__)
        lr = 1e-3 if lr is None else lr
        betas = (0.9, 0.999) if betas is None else betas
        eps = 1e-8 if eps is None else eps
        weight_decay = 1e-2 if weight_decay is None else weight_decay
        bias_correction = True if bias_correction is None else bias_correction
        if isinstance(lr, bool) or not isinstance(lr, (int, float)) or lr < 0:
            # as torch's optimizers: 0 is allowed (PopTorch's tests "train" with lr=0)
            raise ValueError(f"LAMB lr must be a non-negative number, got {lr!r}")
        if not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError(f"LAMB betas must be in [0, 1), got {betas}")
        max_weight_norm = 65500.0 if max_weight_norm is None else max_weight_norm
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      max_weight_norm=float(max_weight_norm)))
        self._setup(loss_scaling, accum_type, None,  # PopTorch's LAMB has no max_grad_norm
                    **_moment_types(first_order_momentum_accum_type,
                                    second_order_momentum_accum_type))
        self.bias_correction = bool(bias_correction)

    def _update(self, w, g, state, group):
        (b1, b2), t = group["betas"], state["step"]
        m, v = self._moments(state, g, b1, b2)
        if self.bias_correction:
            m, v = m / (1 - b1**t), v / (1 - b2**t)
        u = m / (v.sqrt() + group["eps"]) + group["weight_decay"] * w
        w_norm, u_norm = w.norm().item(), u.norm().item()
        trust = 1.0 if w_norm == 0 or u_norm == 0 else min(w_norm, group["max_weight_norm"]) / u_norm
        return w - group["lr"] * trust * u


__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "LAMB", "VariableAttributes"]
