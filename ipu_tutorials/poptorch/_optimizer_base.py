"""The update poptorch.optim's optimizers share: float32 arithmetic, state in its types.

`Optimizer` keeps each state tensor in the type its constructor argument declares, undoes loss
scaling inside the update and answers the simulator's questions about the state it keeps;
`_HostStep` is the concrete optimizers' `step()`, the same update run from each `.grad`.
"""
from __future__ import annotations

import collections
import math

import torch

from ..support import extras as _extras
from . import _sliced_update
from ._checks import check_finite_hyperparameters as _check_finite
from ._ipu_state import IpuStateDict as _IpuStateDict
from ._variable_attributes import VariableAttributes
from ._variable_attributes import allowed_attributes as _allowed
from ._variable_attributes import explicit_arguments as _explicit

_ACCUM_TYPES = (torch.float32, torch.float16)


def _check_accum_type(name: str, dtype) -> torch.dtype:
    if dtype is None:
        return torch.float32
    if dtype not in _ACCUM_TYPES:
        raise ValueError(f"{name} must be torch.float32 or torch.float16, got {dtype!r}")
    return dtype


def _given(**arguments) -> dict:
    """The arguments given (not None), for torch's constructor: as PopTorch's _parseArgs, an
    argument left at None takes torch's default."""
    return {name: value for name, value in arguments.items() if value is not None}


def _check_positive(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return float(value)


class Optimizer(_IpuStateDict):
    """PopTorch's base of its optimizers: the IPU extras and the float32 update they share."""

    _state_tensors: tuple[str, ...] = ()  # names of per-weight state tensors
    _clips = True  # takes max_grad_norm (PopTorch's RMSprop and LAMB do not)
    _flops_per_param = 4
    _elementwise = True  # the update treats each element on its own (may run in slices)

    def __new__(cls, *args, **kwargs):
        self = super().__new__(cls)
        if args or kwargs:  # not when unpickling or copying, which restore variable_attrs
            self.variable_attrs = VariableAttributes(
                list(dict.fromkeys(["lr", *_explicit(cls, args, kwargs)])),
                _allowed(cls, f"{__package__}.optim"))
        return self

    def _setup(self, loss_scaling: float | None, accum_type, max_grad_norm: float | None,
               **_state_types):
        """_state_types maps a state tensor to (the argument that sets its type, that type).

        None means the default for every IPU-specific argument, as in PopTorch.
        """
        _check_finite(type(self).__name__, self.param_groups)
        self.loss_scaling = _check_positive("loss_scaling",
                                            1.0 if loss_scaling is None else loss_scaling)
        self.accum_type = _check_accum_type("accum_type", accum_type)
        max_grad_norm = math.inf if max_grad_norm is None else max_grad_norm
        if math.isnan(max_grad_norm):
            raise ValueError("max_grad_norm must be a number (math.inf disables clipping), "
                             f"got {max_grad_norm!r}")
        self._max_grad_norm = float(max_grad_norm)
        if self._clips:  # PopTorch's SGD, Adam and AdamW hold it; its RMSprop and LAMB have none
            self.max_grad_norm = self._max_grad_norm
        self._state_types = {k: _check_accum_type(arg, v) for k, (arg, v) in _state_types.items()}
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

    @_extras.served_method("poptorch.optim.Optimizer.apply_gradients")
    def apply_gradients(self, grads: dict, scale: float) -> None:
        """(Simulator extra) the update an IPU call makes, run here: each weight updated from
        its gradient in `grads` multiplied by `scale`, in float32.

        Args:
            grads: {weight: accumulated gradient}.
            scale: 1 / (loss_scaling x micro-batches averaged), as the simulated IPU uses.
        """
        self._apply_gradients(grads, scale)

    @torch.no_grad()
    def _apply_gradients(self, grads: dict, scale: float) -> None:
        """Update weights from explicit gradients multiplied by `scale` (in float32): the
        simulated IPU calls this with the accumulated, loss-scaled gradients."""
        if _sliced_update.can_slice(self):
            _sliced_update.apply_sliced(self, grads, scale)
        else:
            self._apply_per_tensor(grads, scale)

    def _apply_per_tensor(self, grads: dict, scale: float) -> None:
        """_apply_gradients one whole weight at a time: the reference for the sliced update."""
        g32 = {p: g.float() * scale for p, g in grads.items()}
        if math.isfinite(self._max_grad_norm) and g32:
            norm = torch.sqrt(sum(g.pow(2).sum() for g in g32.values()))
            factor = self._max_grad_norm / max(self._max_grad_norm, norm.item())
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
    def _accumulator_type(self) -> torch.dtype | None:
        """(Simulator) the type of the device's gradient accumulators (`accum_type`); None
        for the weights' own type."""
        return self.accum_type

    def _state_for(self, p, group: dict) -> dict:
        state = self.state[p]
        for name in self._group_state_tensors(group):
            if name not in state:
                state[name] = torch.zeros_like(p, dtype=self._state_dtype(name, p))
        return state

    def _state_dtype(self, name: str, weight: torch.Tensor) -> torch.dtype:
        """(Simulator) the device's type for the state tensor `name` of `weight`: the type
        its constructor argument asked for (`first_order_momentum_accum_type`, ...), else
        float32."""
        return self._state_type(name)

    def _group_state_tensors(self, group: dict) -> tuple[str, ...]:
        """The state tensors one param group needs (momentum can differ between groups)."""
        return self._state_tensors

    def _state_type(self, name: str) -> torch.dtype:
        return self._state_types.get(name, torch.float32)

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
    def _state_per_param(self) -> int:
        """(Simulator) the optimizer-state tensors kept per weight (momentum, variance, ...),
        which the memory plan counts."""
        return len(self._state_tensors)

    @property
    def _state_bytes(self) -> int:
        """(Simulator) the bytes of one element of that state, the widest of its types."""
        types = [self._state_type(n) for n in self._state_tensors]
        return max((torch.empty(0, dtype=t).element_size() for t in types), default=4)


class _HostStep:
    """`step()` of the concrete optimizers: the IPU's update run on the host, from each weight's
    `.grad`. (Not on Optimizer itself: PopTorch's base has no step; its optimizers take
    torch's.)"""

    @torch.no_grad()
    def step(self, closure=None):
        """Update from the .grad of every weight (the CPU path)."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        grads = {p: p.grad for group in self.param_groups for p in group["params"]
                 if p.grad is not None}
        self._apply_gradients(grads, scale=1.0)
        return loss


def _moment_types(first, second) -> dict:
    """Adam-style state tensors with the argument that sets each one's type."""
    return {"exp_avg": ("first_order_momentum_accum_type", first),
            "exp_avg_sq": ("second_order_momentum_accum_type", second)}
