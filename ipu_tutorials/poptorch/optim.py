"""poptorch.optim: SGD, Adam, AdamW, RMSprop and LAMB with IPU-style precision controls.

Each optimizer does its arithmetic in float32 and keeps its state in the declared accumulation
types (float32 by default), writing weights back in their own type, as PopART's updates do.
With float32 weights the result equals torch.optim's to rounding. Loss scaling is undone inside
the update, in float32, so scaled gradients never round to zero on the way.
"""
from __future__ import annotations

import collections
import math
import warnings

import torch

from . import _sliced_update
from ._checks import check_finite_hyperparameters
from ._ipu_state import IpuStateDict
from ._variable_attributes import VariableAttributes, allowed_attributes, explicit_arguments

ACCUM_TYPES = (torch.float32, torch.float16)


def _check_accum_type(name: str, dtype) -> torch.dtype:
    if dtype is None:
        return torch.float32
    if dtype not in ACCUM_TYPES:
        raise ValueError(f"{name} must be torch.float32 or torch.float16, got {dtype!r}")
    return dtype


def _check_positive(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return float(value)


class Optimizer(IpuStateDict):
    """PopTorch's base of its optimizers: the IPU extras and the float32 update they share."""

    _state_tensors: tuple[str, ...] = ()  # names of per-weight state tensors
    flops_per_param = 4
    elementwise = True  # the update treats each element on its own (may run in slices)

    def __new__(cls, *args, **kwargs):
        self = super().__new__(cls)
        if args or kwargs:  # not when unpickling or copying, which restore variable_attrs
            self.variable_attrs = VariableAttributes(
                list(dict.fromkeys(["lr", *explicit_arguments(cls, args, kwargs)])),
                allowed_attributes(cls, __name__))
        return self

    def _setup(self, loss_scaling: float | None, accum_type, max_grad_norm: float | None,
               **state_types):
        """state_types maps a state tensor to (the argument that sets its type, that type).

        None means the default for every IPU-specific argument, as in PopTorch.
        """
        check_finite_hyperparameters(type(self).__name__, self.param_groups)
        self.loss_scaling = _check_positive("loss_scaling",
                                            1.0 if loss_scaling is None else loss_scaling)
        self.accum_type = _check_accum_type("accum_type", accum_type)
        max_grad_norm = math.inf if max_grad_norm is None else max_grad_norm
        if math.isnan(max_grad_norm):
            raise ValueError("max_grad_norm must be a number (math.inf disables clipping), "
                             f"got {max_grad_norm!r}")
        self.max_grad_norm = float(max_grad_norm)
        self.state_types = {k: _check_accum_type(arg, v) for k, (arg, v) in state_types.items()}
        # PopTorch's flags: a loaded state dict awaits the device; the host's copy is stale
        self.ipu_state_is_dirty = self.host_state_is_dirty = False

    def __getstate__(self):
        # torch pickles only defaults, state and param_groups: keep the IPU settings too, the state
        # as a plain dict (poptorch.load's weights-only load refuses defaultdicts), not the device.
        state = {k: v for k, v in self.__dict__.items() if k != "_ipu_device"}
        return {**state, "state": dict(self.state)}

    def __setstate__(self, state):
        super().__setstate__(state)
        self.state = collections.defaultdict(dict, self.state)

    @torch.no_grad()
    def step(self, closure=None):
        """Update from the .grad of every weight (the CPU path)."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        grads = {p: p.grad for group in self.param_groups for p in group["params"]
                 if p.grad is not None}
        self.apply_gradients(grads, scale=1.0)
        return loss

    @torch.no_grad()
    def apply_gradients(self, grads: dict, scale: float) -> None:
        """Update weights from explicit gradients multiplied by `scale` (in float32).

        The simulated IPU calls this with the accumulated, loss-scaled gradients and
        scale = 1 / (loss_scaling x micro-batches averaged).
        """
        if _sliced_update.can_slice(self):
            _sliced_update.apply_sliced(self, grads, scale)
        else:
            self._apply_per_tensor(grads, scale)

    def _apply_per_tensor(self, grads: dict, scale: float) -> None:
        """apply_gradients one whole weight at a time: the reference for the sliced update."""
        g32 = {p: g.float() * scale for p, g in grads.items()}
        if math.isfinite(self.max_grad_norm) and g32:
            norm = torch.sqrt(sum(g.pow(2).sum() for g in g32.values()))
            factor = self.max_grad_norm / max(self.max_grad_norm, norm.item())
            g32 = {p: g * factor for p, g in g32.items()}
        for group in self.param_groups:
            for p in group["params"]:
                if p in g32:
                    g = -g32[p] if group.get("maximize") else g32[p]
                    state = self._state_for(p, group)
                    state["step"] = int(state.get("step", 0)) + 1  # load_state_dict: a float tensor
                    new = self._update(p.detach().float(), g, state, group)
                    p.copy_(new.to(p.dtype))

    @property
    def accumulator_type(self) -> torch.dtype | None:
        """(Simulator) the type of the device's gradient accumulators (`accum_type`); None
        for the weights' own type."""
        return self.accum_type

    def _state_for(self, p, group: dict) -> dict:
        state = self.state[p]
        for name in self._group_state_tensors(group):
            if name not in state:
                state[name] = torch.zeros_like(p, dtype=self.state_dtype(name, p))
        return state

    def state_dtype(self, name: str, weight: torch.Tensor) -> torch.dtype:
        """(Simulator) the device's type for the state tensor `name` of `weight`: the type
        its constructor argument asked for (`first_order_momentum_accum_type`, ...), else
        float32."""
        return self._state_type(name)

    def _group_state_tensors(self, group: dict) -> tuple[str, ...]:
        """The state tensors one param group needs (momentum can differ between groups)."""
        return self._state_tensors

    def _state_type(self, name: str) -> torch.dtype:
        return self.state_types.get(name, torch.float32)

    def _moments(self, state: dict, g: torch.Tensor, b1: float, b2: float):
        """Adam's running first and second moments of the gradient, kept in their own types."""
        m = self._store(state, "exp_avg", b1 * state["exp_avg"].float() + (1 - b1) * g)
        v = self._store(state, "exp_avg_sq", b2 * state["exp_avg_sq"].float() + (1 - b2) * g * g)
        return m, v

    @staticmethod
    def _store(state: dict, name: str, value: torch.Tensor) -> torch.Tensor:
        """Keep state in its declared type and return what the update sees (rounded to it)."""
        state[name] = value.to(state[name].dtype)
        return state[name].float()

    def _update(self, w, g, state, group):  # pragma: no cover - every optimizer overrides
        raise NotImplementedError

    @property
    def state_per_param(self) -> int:
        """(Simulator) the optimizer-state tensors kept per weight (momentum, variance, ...),
        which the memory plan counts."""
        return len(self._state_tensors)

    @property
    def state_bytes(self) -> int:
        """(Simulator) the bytes of one element of that state, the widest of its types."""
        types = [self._state_type(n) for n in self._state_tensors]
        return max((torch.empty(0, dtype=t).element_size() for t in types), default=4)


def _moment_types(first, second) -> dict:
    """Adam-style state tensors with the argument that sets each one's type."""
    return {"exp_avg": ("first_order_momentum_accum_type", first),
            "exp_avg_sq": ("second_order_momentum_accum_type", second)}


class SGD(Optimizer, torch.optim.SGD):
    """Stochastic gradient descent with optional momentum, dampening and weight decay.

    velocity_scaling keeps the stored velocity multiplied by a constant so that it does not
    underflow in float16; PopTorch honours it with use_combined_accum=True. That variant keeps
    one tensor per weight for both the accumulated gradients and the velocity, and PopTorch
    ignores accum_type and velocity_accum_type for it (python/optim.py; CompilerImpl.cpp passes
    PopART no type): here it takes the weight's type, and there is no optimizer state to place.
    """

    flops_per_param = 4

    def __init__(self, params, lr: float = 0.01, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False, maximize: bool = False,
                 loss_scaling: float = 1.0, velocity_scaling: float = 1.0,
                 use_combined_accum: bool = False, accum_type=None, velocity_accum_type=None,
                 max_grad_norm: float = math.inf, **torch_kwargs):
        super().__init__(params, lr=lr, momentum=momentum, dampening=dampening,
                         weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                         **torch_kwargs)
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
    def accumulator_type(self) -> torch.dtype | None:
        """(Simulator) `accum_type`, or None (the weight's type) with the combined
        accumulator, for which PopTorch ignores `accum_type`."""
        return None if self.use_combined_accum else self.accum_type

    def state_dtype(self, name: str, weight: torch.Tensor) -> torch.dtype:
        """(Simulator) the velocity's type: `velocity_accum_type`, or the weight's own type
        with the combined accumulator."""
        return weight.dtype if self.use_combined_accum else self._state_type(name)

    @property
    def state_per_param(self) -> int:
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


class Adam(Optimizer, torch.optim.Adam):
    """Adam with L2 weight decay (added to the gradient), as torch.optim.Adam."""

    _state_tensors = ("exp_avg", "exp_avg_sq")
    flops_per_param = 12
    _decoupled = False

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False, loss_scaling: float = 1.0,
                 accum_type=None, first_order_momentum_accum_type=None,
                 second_order_momentum_accum_type=None, max_grad_norm: float = math.inf,
                 bias_correction: bool = True, **torch_kwargs):
        if amsgrad:
            raise ValueError(f"{type(self).__name__}(amsgrad=True) is not supported on the IPU; "
                             f"use amsgrad=False")
        # named, not super(): up to torch 2.6 Adam's constructor would run on into AdamW's
        (torch.optim.AdamW if self._decoupled else torch.optim.Adam).__init__(
            self, params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, **torch_kwargs)
        self._setup(loss_scaling, accum_type, max_grad_norm,
                    **_moment_types(first_order_momentum_accum_type,
                                    second_order_momentum_accum_type))
        self.bias_correction = bool(bias_correction)

    def _update(self, w, g, state, group):
        lr, wd, (b1, b2), eps = group["lr"], group["weight_decay"], group["betas"], group["eps"]
        if self._decoupled:
            w = w * (1 - lr * wd)
        elif wd:
            g = g + wd * w
        m, v = self._moments(state, g, b1, b2)
        t = state["step"]
        bc1, bc2 = (1 - b1**t, 1 - b2**t) if self.bias_correction else (1.0, 1.0)
        return w - (lr / bc1) * m / (v.sqrt() / math.sqrt(bc2) + eps)


class AdamW(Adam, torch.optim.AdamW):
    """Adam with decoupled weight decay (default 0.01), as torch.optim.AdamW."""

    _decoupled = True

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, **kwargs):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad, **kwargs)


class RMSprop(Optimizer, torch.optim.RMSprop):
    """RMSprop; use_tf_variant puts eps inside the square root, as TensorFlow does."""

    flops_per_param = 8

    def __init__(self, params, lr: float = 0.01, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum: float = 0.0, centered: bool = False,
                 loss_scaling: float = 1.0, accum_type=None, first_order_momentum_accum_type=None,
                 second_order_momentum_accum_type=None, use_tf_variant: bool = False,
                 max_grad_norm: float = math.inf, **torch_kwargs):
        super().__init__(params, lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                         momentum=momentum, centered=centered, **torch_kwargs)
        self._setup(loss_scaling, accum_type, max_grad_norm,
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


class LAMB(Optimizer, torch.optim.Optimizer):
    """Layer-wise adaptive moments (You et al., 2019): Adam's step scaled per weight tensor.

    u = m_hat / (sqrt(v_hat) + eps) + weight_decay * w;  w -= lr * min(|w|, max_weight_norm) / |u| * u,
    the trust ratio being 1 when either norm is 0. torch has no LAMB; this is PopTorch's rule.
    """

    _state_tensors = ("exp_avg", "exp_avg_sq")
    flops_per_param = 16
    elementwise = False  # the trust ratio takes the norms of whole tensors

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, bias_correction: bool = True,
                 loss_scaling: float = 1.0, max_weight_norm: float | None = 65500.0,
                 accum_type=None, first_order_momentum_accum_type=None,
                 second_order_momentum_accum_type=None, max_grad_norm: float = math.inf):
        if isinstance(lr, bool) or not isinstance(lr, (int, float)) or lr < 0:
            # as torch's optimizers: 0 is allowed (PopTorch's tests "train" with lr=0)
            raise ValueError(f"LAMB lr must be a non-negative number, got {lr!r}")
        if not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError(f"LAMB betas must be in [0, 1), got {betas}")
        max_weight_norm = 65500.0 if max_weight_norm is None else max_weight_norm
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      max_weight_norm=float(max_weight_norm)))
        self._setup(loss_scaling, accum_type, max_grad_norm,
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
