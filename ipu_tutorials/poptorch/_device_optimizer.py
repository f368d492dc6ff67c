"""The optimizer as the IPU holds it: supported types, and hyperparameters that change only
through setOptimizer.

PopTorch converts the optimizer into the compiled program when the model is wrapped and again
at each setOptimizer(); editing optimizer.param_groups afterwards does not reach the device.
Attributes it embeds as constants cannot change after compile at all: for poptorch.optim
optimizers those not passed to the constructor (unless marked with variable_attrs), for
torch.optim ones those left at their default; lr is always variable.
"""
from __future__ import annotations

import functools
import inspect
import logging
import warnings

import torch

from . import _ipu_state as ipu_state
from . import optim

logger = logging.getLogger("poptorch")

# The optimizers PopTorch runs natively, most derived first (AdamW before Adam).
SUPPORTED = (optim.SGD, optim.AdamW, optim.Adam, optim.RMSprop, optim.LAMB,
             torch.optim.SGD, torch.optim.AdamW, torch.optim.Adam, torch.optim.RMSprop)
# torch's implementation switches, which PopTorch ignores
IGNORED_KEYS = {"params", "foreach", "fused", "differentiable", "capturable", "initial_lr"}
# optimizer-level settings PopTorch reads as constants unless they were passed explicitly
OPTIMIZER_ATTRS = ("loss_scaling", "max_grad_norm")


def optimizer_kind(optimizer) -> type:
    """The natively supported optimizer type this optimizer runs as.

    Raises:
        AssertionError: for a type PopTorch does not support (as PopTorch does).
        ValueError: for amsgrad, which the IPU's Adam does not implement.
    """
    kind = next((t for t in type(optimizer).__mro__ if t in SUPPORTED), None)
    assert kind is not None, (
        f"Unsupported optimizer type {type(optimizer).__name__}. Types supported: SGD, Adam, "
        f"AdamW, RMSprop (torch.optim or poptorch.optim) and poptorch.optim.LAMB")
    if any(group.get("amsgrad") for group in optimizer.param_groups):
        raise ValueError("Only non-amsgrad Adam/AdamW optimizers are supported.")
    centered = {bool(group.get("centered")) for group in optimizer.param_groups}
    assert len(centered) == 1, (
        "All parameter groups must have the same value for the 'centered' attribute of "
        "RMSprop: the IPU compiles one variant for the whole optimizer")
    if type(optimizer) is not kind:
        logger.warning("Optimizer `%s` subclassed from classes in poptorch.optim or torch.optim "
                       "are unlikely to behave as intended. Poptorch does not run Python "
                       "optimizer code directly; but instead uses IPU native optimisers "
                       "implemented in PopART.", type(optimizer).__name__)
    return kind


def same_family(kind: type, other: type) -> bool:
    """poptorch.optim.SGD and torch.optim.SGD compile to the same IPU optimizer, and so on."""
    def torch_base(t):
        return next((b for b in t.__mro__ if b.__module__.startswith("torch.optim")), t)
    return torch_base(kind) is torch_base(other)


def _defaults(kind: type) -> dict:
    params = inspect.signature(kind.__init__).parameters
    return {n: p.default for n, p in params.items() if p.default is not inspect.Parameter.empty}


def _hyperparameters(optimizer) -> list[dict]:
    return [{k: v for k, v in group.items() if k not in IGNORED_KEYS}
            for group in optimizer.param_groups]


def _is_variable(optimizer, name: str, value) -> bool:
    """Whether the device holds `name` as a variable: poptorch.optim's rule (_ipu_state), or for
    torch.optim a value off its default."""
    if name == "lr" or hasattr(optimizer, "variable_attrs"):
        return ipu_state.is_variable(optimizer, name)
    default = _defaults(optimizer_kind(optimizer)).get(name, inspect.Parameter.empty)
    return default is inspect.Parameter.empty or value != default


class DeviceOptimizer:
    """A snapshot of the hyperparameters the device uses, taken at wrap time and setOptimizer."""

    def __init__(self, optimizer):
        self.kind = optimizer_kind(optimizer)
        self.groups = _hyperparameters(optimizer)
        self.attrs = {a: getattr(optimizer, a) for a in OPTIMIZER_ATTRS if hasattr(optimizer, a)}
        self.warned = False

    def check_constants(self, optimizer) -> None:
        """Refuse a new optimizer that changes an attribute compiled in as a constant.

        Raises:
            ValueError: naming the attribute, both values and the fix.
        """
        new_groups = _hyperparameters(optimizer)
        pairs = [(f"param_groups[{i}]['{k}']", k, old.get(k), new.get(k))
                 for i, (old, new) in enumerate(zip(self.groups, new_groups)) for k in new]
        pairs += [(a, a, v, getattr(optimizer, a, v)) for a, v in self.attrs.items()]
        for where, name, old, new in pairs:
            if old != new and not _is_variable(optimizer, name, old):
                raise ValueError(
                    f"{where} changed from {old!r} to {new!r}, but {name!r} is a constant of "
                    f"the compiled model: PopTorch embeds attributes left at their default (or, "
                    f"for poptorch.optim, not passed to the constructor) as constants. Pass "
                    f"{name}= to the optimizer's constructor before wrapping (or, for "
                    f"poptorch.optim, call optimizer.variable_attrs.markAsVariable({name!r})), "
                    f"or wrap the model again.")

    @property
    def loss_scaling(self) -> float:
        """The loss scale the device took (1 for torch.optim, which has none): it goes into
        the spec, where the runtime reads it."""
        return float(self.attrs.get("loss_scaling", 1.0))

    def view(self, optimizer):
        """The optimizer as the device runs it, for one training call: the user's type,
        weights and state (shared, so the update's state stays the user's optimizer's, as
        torch keeps it), with the hyperparameters taken at wrap time or setOptimizer. The
        user's object is only read: their later edits stay theirs and warn once."""
        self._warn_once(_hyperparameters(optimizer),
                        {a: getattr(optimizer, a) for a in self.attrs})
        device = object.__new__(type(optimizer))
        # an instance's own `step` (an LR scheduler's wrapper, a user's value) is the user's
        vars(device).update({k: v for k, v in vars(optimizer).items() if k != "step"})
        device.param_groups = [{**group, **held}
                               for group, held in zip(optimizer.param_groups, self.groups)]
        vars(device).update(self.attrs)
        if type(optimizer).step is not self.kind.step:  # PopTorch runs its native optimizer,
            device.step = functools.partial(self.kind.step, device)  # never a subclass's step
        return device

    def _warn_once(self, user_groups: list[dict], user_attrs: dict) -> None:
        if self.warned or (user_groups == self.groups and user_attrs == self.attrs):
            return
        self.warned = True
        warnings.warn("the optimizer's hyperparameters were changed after the model was wrapped, "
                      "but the IPU keeps the values it was given: call "
                      "poptorch_model.setOptimizer(optimizer) to apply the new values (as on "
                      "real hardware)", stacklevel=5)


def popart_type_name(optimizer) -> str:
    """The name PopTorch gives the IPU optimizer this one becomes (its messages use it)."""
    kind = optimizer_kind(optimizer)
    if same_family(kind, torch.optim.SGD):
        return "SGD1" if getattr(optimizer, "use_combined_accum", False) else "SGD2"
    if same_family(kind, torch.optim.RMSprop):
        return "RMSPROP_CENTERED" if optimizer.param_groups[0].get("centered") else "RMSPROP"
    name = {optim.LAMB: "LAMB", optim.AdamW: "ADAMW", torch.optim.AdamW: "ADAMW"}.get(kind, "ADAM")
    no_bias = name != "ADAM" and not getattr(optimizer, "bias_correction", True)
    return name + ("_NO_BIAS" if no_bias else "")


class AttributeTracker:
    """PopTorch's check for optimizer attributes it does not know.

    The attributes an optimizer has when the model first compiles are recorded; any added later
    (optimizer.step = 0, a group's new "initial_lr") are ignored by the IPU, and each set of them
    is reported once: a warning, or a debug message under opts.relaxOptimizerAttributesChecks().
    Names starting with "_" are torch's and the simulator's own bookkeeping, never reported.
    """

    _OWN = ("defaults", "state", "param_groups", "variable_attrs")

    def __init__(self, relaxed: bool):
        self.log = logger.debug if relaxed else logger.warning
        self.group_attributes: list[str] = []
        self.optimizer_attributes: list[str] = []
        self.recording = True
        self.reported: list[str] = []

    def check(self, optimizer) -> None:
        """Record (first call) or report unexpected attributes of the optimizer and its groups."""
        kind = popart_type_name(optimizer)
        self._check(self.group_attributes, list(optimizer.defaults), "default group variable", kind)
        names = [k for k in vars(optimizer) if k not in self._OWN and not k.startswith("_")]
        self._check(self.optimizer_attributes, names, "optimizer attribute", kind)
        for i, group in enumerate(optimizer.param_groups):
            self._check(self.group_attributes, [k for k in group if k != "params"],
                        f"group {i} attribute", kind)
        self.recording = False

    def _check(self, expected: list, provided: list, what: str, kind: str) -> None:
        extra = [name for name in provided if name not in expected]
        if self.recording:
            expected += extra
        elif extra:
            message = f"Ignoring unexpected {what} in {kind} optimizer: {extra}"
            if message not in self.reported:
                self.log(message)
                self.reported.append(message)
