"""The optimizer's `ipu_state` and `ipu_param` entries: its state tensors and hyperparameters under
PopART's names, as PopTorch's optimizer.state_dict() returns them and load_state_dict takes them.

Names follow PopART's tensornames.hpp: state tensors are `<prefix>___<weight>` (Accl1___lin.weight),
hyperparameters `<name>___specific___<weight>` for each weight, loss scaling `lossScaling_FLOAT`
(FLOAT16 for float16 weights). A hyperparameter is a tensor only when it can change after compile
(variable_attrs); PopART compiles the others in as constants. SGD without momentum or gradient
accumulation is PopART's SGD0 and keeps its compound scalars; with either, SGD1's. The formulas
are PopART's (sgd.hpp): slr0 = lr (1 - dm) / ls, wdsf0 = 1 - lr (1 - dm) wd, slr1 = lr / (vs rf),
swd1 = (1 - dm) wd vs, dpsf1 = (1 - dm) vs rf / (ls af), smm1 = mm / rf.
"""
from __future__ import annotations

import weakref

import torch

from ._logging import logger

# poptorch.optim's per-weight state tensors, by optimizer family, and PopART's prefix for each
STATE_PREFIXES = {
    "SGD": {"momentum_buffer": "Accl"},
    "Adam": {"exp_avg": "Accl1", "exp_avg_sq": "Accl2"},
    "RMSprop": {"square_avg": "Accl1", "grad_avg": "Accl2", "momentum_buffer": "Accl3"},
}
LOSS_SCALE_FACTOR = "lossScaleUpdateFactor"  # automatic loss scaling's state (PopART's name)
STEP_PREFIX = "Step"  # Adam's and LAMB's update count, a state tensor when bias correction is on
# (PopART name, constructor arguments it depends on) for the non-SGD families
_ADAM_PARAMS = [("learningRate", ("lr",)), ("weightDecay", ("weight_decay",)),
                ("adamBeta1", ("betas",)), ("adamBeta2", ("betas",)), ("adamEps", ("eps",)),
                ("maxWeightNorm", ("max_weight_norm",))]
_RMSPROP_PARAMS = [("learningRate", ("lr",)), ("weightDecay", ("weight_decay",)),
                   ("adaptiveAlpha", ("alpha",)), ("adaptiveMomentum", ("momentum",)),
                   ("adaptiveEps", ("eps",))]
_SGD0_PARAMS = [("scaledLearningRate0", ("lr", "dampening", "loss_scaling")),
                ("weightDecayScaleFactor0", ("lr", "dampening", "weight_decay"))]
_SGD1_PARAMS = [("scaledLearningRate1", ("lr", "velocity_scaling")),
                ("scaledWeightDecay1", ("dampening", "weight_decay", "velocity_scaling")),
                ("dampeningScaleFactor1", ("dampening", "velocity_scaling", "loss_scaling")),
                ("scaledMomentum1", ("momentum",))]


def family(optimizer) -> str:
    """SGD, Adam (Adam, AdamW and LAMB) or RMSprop: which PopART optimizer it becomes."""
    if isinstance(optimizer, torch.optim.SGD):
        return "SGD"
    if isinstance(optimizer, torch.optim.RMSprop):
        return "RMSprop"
    return "Adam"


def is_variable(optimizer, attr: str) -> bool:
    """A poptorch.optim hyperparameter the device can change without recompiling (lr always)."""
    return attr == "lr" or not optimizer.variable_attrs.isConstant(attr)


def sgd_has_velocity(optimizer, accumulation: int) -> bool:
    """PopART's SGD0 (no velocity) needs momentum compiled in as 0 and no gradient accumulation."""
    return accumulation > 1 or is_variable(optimizer, "momentum") or any(
        g["momentum"] for g in optimizer.param_groups)


def _sgd_values(group: dict, optimizer, velocity: bool, rf: int, af: int) -> dict:
    lr, wd, dm, mm = group["lr"], group["weight_decay"], group["dampening"], group["momentum"]
    ls = optimizer.loss_scaling
    if not velocity:
        return {"scaledLearningRate0": lr * (1 - dm) / ls,
                "weightDecayScaleFactor0": 1 - lr * (1 - dm) * wd}
    vs = group.get("velocity_scaling", 1.0) if optimizer.use_combined_accum else 1.0
    return {"scaledLearningRate1": lr / (vs * rf), "scaledWeightDecay1": (1 - dm) * wd * vs,
            "dampeningScaleFactor1": (1 - dm) * vs * rf / (ls * af), "scaledMomentum1": mm / rf}


def _group_values(group: dict) -> dict:
    values = {"learningRate": group["lr"], "weightDecay": group["weight_decay"],
              "adamEps": group["eps"], "adaptiveEps": group["eps"]}
    if "betas" in group:
        values.update(adamBeta1=group["betas"][0], adamBeta2=group["betas"][1])
    for key, name in (("max_weight_norm", "maxWeightNorm"), ("alpha", "adaptiveAlpha"),
                      ("momentum", "adaptiveMomentum")):
        if key in group:
            values[name] = group[key]
    return values


def hyperparameters(optimizer, names: dict, replicas: int = 1, accumulation: int = 1,
                    mean_accumulation: bool = False) -> dict[str, torch.Tensor]:
    """ipu_param: each variable hyperparameter, per weight, as a float32 scalar tensor."""
    kind = family(optimizer)
    velocity = kind == "SGD" and sgd_has_velocity(optimizer, accumulation)
    table = {"SGD": _SGD1_PARAMS if velocity else _SGD0_PARAMS, "Adam": _ADAM_PARAMS,
             "RMSprop": _RMSPROP_PARAMS}[kind]
    af = accumulation if mean_accumulation else 1
    params = {}
    for group in optimizer.param_groups:
        values = (_sgd_values(group, optimizer, velocity, replicas, af) if kind == "SGD"
                  else _group_values(group))
        for name, depends_on in table:
            if name in values and any(is_variable(optimizer, a) for a in depends_on):
                for p in group["params"]:
                    params[f"{name}___specific___{names[p]}"] = torch.tensor(float(values[name]))
    if is_variable(optimizer, "loss_scaling"):
        params[loss_scaling_name(optimizer)] = torch.tensor(float(optimizer.loss_scaling))
    return params


def loss_scaling_name(optimizer) -> str:
    first = next(p for g in optimizer.param_groups for p in g["params"])
    return "lossScaling_" + ("FLOAT16" if first.dtype == torch.float16 else "FLOAT")


def _state_names(optimizer, group: dict, velocity: bool) -> dict:
    """{our state tensor: PopART prefix} for one param group."""
    kind = family(optimizer)
    if kind == "SGD":
        return STATE_PREFIXES["SGD"] if velocity else {}
    prefixes = STATE_PREFIXES[kind]
    return {n: prefixes[n] for n in optimizer._group_state_tensors(group) if n in prefixes}


def state_tensors(optimizer, names: dict, accumulation: int = 1) -> dict[str, torch.Tensor]:
    """ipu_state: each weight's optimizer state (zeros before the first update), as copies."""
    velocity = family(optimizer) == "SGD" and sgd_has_velocity(optimizer, accumulation)
    tensors = {}
    for group in optimizer.param_groups:
        for p in group["params"]:
            state = optimizer.state.get(p, {})
            for ours, prefix in _state_names(optimizer, group, velocity).items():
                value = state.get(ours)
                tensors[f"{prefix}___{names[p]}"] = torch.zeros_like(
                    p, dtype=optimizer._state_dtype(ours, p)) if value is None else value.clone()
            if family(optimizer) == "Adam" and getattr(optimizer, "bias_correction", True):
                tensors[f"{STEP_PREFIX}___{names[p]}"] = torch.tensor(
                    float(state.get("step", 0)))
    return tensors


def write_state_tensors(optimizer, names: dict, tensors: dict, accumulation: int = 1) -> None:
    """Load ipu_state into the optimizer's state; names it does not hold are ignored.

    A loaded velocity counts as history: SGD's first update no longer starts from the gradient.
    """
    velocity = family(optimizer) == "SGD" and sgd_has_velocity(optimizer, accumulation)
    for group in optimizer.param_groups:
        # only what the optimizer holds: SGD1's accumulator under gradient accumulation with no
        # momentum would otherwise become a velocity the next update applies
        held = optimizer._group_state_tensors(group)
        for p in group["params"]:
            state = optimizer.state[p]
            for ours, prefix in _state_names(optimizer, group, velocity).items():
                value = tensors.get(f"{prefix}___{names[p]}")
                if value is not None and ours in held:
                    state[ours] = value.detach().to(optimizer._state_dtype(ours, p)).clone()
                    if family(optimizer) == "SGD":
                        state["step"] = max(int(state.get("step", 0)), 1)
            step = tensors.get(f"{STEP_PREFIX}___{names[p]}")
            if step is not None:
                state["step"] = int(step.item())


def _empty() -> dict:
    return {"ipu_state": None, "ipu_param": None}


def _copied(entries: dict) -> dict:
    return {k: None if v is None else dict(v) for k, v in entries.items()}


class IpuStateDict:
    """poptorch.optim's state_dict() / load_state_dict(): torch's entries plus ipu_state and
    ipu_param (None until a model using the optimizer is compiled; never for an offline IPU).

    The device's copy is read when the host's is stale (after compile or a run) and cached
    until then; a loaded one is written to the device before the model's next run.
    """

    def _ipu_entries(self) -> dict:
        device = getattr(self, "_ipu_device", None)
        device = device() if device is not None else None
        if device is not None and getattr(self, "host_state_is_dirty", False):
            logger.info("Writing optimiser state tensors from IPU to host.")  # PopTorch's lines
            self._ipu_cache = device.read()
            self.host_state_is_dirty = False
        elif device is not None:
            logger.debug("Using cached optimiser state dict")
        return getattr(self, "_ipu_cache", None) or _empty()

    def state_dict(self) -> dict:
        """torch's `state` and `param_groups`, plus PopTorch's `ipu_state` and `ipu_param`
        (PopART's names for the device's state tensors and hyperparameters), read from the
        device when the host's copy is stale. PopTorch leaves torch's `state` empty; here it
        is filled (docs/differences.md)."""
        return {**_copied(self._ipu_entries()), **torch.optim.Optimizer.state_dict(self)}

    def load_state_dict(self, state: dict) -> None:
        """Raises:
            RuntimeError: for an empty dict, or one without ipu_state and ipu_param (a
                torch.optim optimizer's), as PopTorch does.
        """
        if not state:
            raise RuntimeError("Cannot load optimizer state dictionary because it is empty.")
        if not ("ipu_state" in state and "ipu_param" in state):
            raise RuntimeError("Only IPU optimizer states can be loaded onto the IPU.")
        torch.optim.Optimizer.load_state_dict(self, state)
        self._ipu_cache = _copied({k: state[k] for k in ("ipu_state", "ipu_param")})
        self.ipu_state_is_dirty = any(v is not None for v in self._ipu_cache.values())
        self.host_state_is_dirty = False


class DeviceOptimizerState:
    """The optimizer state a compiled training model holds on its (simulated) device.

    The optimizer's state tensors are shared with the host here (the simulator updates them in
    place), so reading copies them under PopART's names; the hyperparameters are the values
    the device was given at compile or setOptimizer, or loaded since.
    """

    def __init__(self, model: torch.nn.Module, spec, loss_scaling=None):
        self.loss_scaling = loss_scaling  # the model's AutomaticLossScaling, if enabled
        self.names = {p: n for n, p in model.named_parameters()}
        self.accumulation = spec.gradient_accumulation
        self.numbers = (spec.replication_factor, spec.gradient_accumulation, spec.mean_reduction)
        self.optimizer, self.params = None, {}

    def use(self, optimizer) -> None:
        """At compile and setOptimizer: the device takes this optimizer's values."""
        if self.optimizer is not None and self.optimizer is not optimizer:
            self.release()
        if not isinstance(optimizer, IpuStateDict):  # torch.optim's twin: torch's state_dict
            self.optimizer = None
            return
        self.optimizer = optimizer
        if self.loss_scaling is not None:  # the factor changes it: never a constant (PopTorch)
            optimizer.variable_attrs.markAsVariable("loss_scaling")
        self.params = hyperparameters(optimizer, self.names, *self.numbers)
        optimizer._ipu_device = weakref.ref(self)
        self.before_run()
        optimizer.host_state_is_dirty = True

    def before_run(self) -> None:
        """Write a state dict loaded into the optimizer since the last run (its known names)."""
        optimizer = self.optimizer
        if optimizer is None or not optimizer.ipu_state_is_dirty:
            return
        loaded = optimizer._ipu_cache
        self.params.update({k: v.detach().clone() for k, v in (loaded["ipu_param"] or {}).items()
                            if k in self.params})
        state = loaded["ipu_state"] or {}
        logger.info("Writing optimiser state tensors from host to IPU memory.")
        write_state_tensors(optimizer, self.names, state, self.accumulation)
        if self.loss_scaling is not None and LOSS_SCALE_FACTOR in state:
            self.loss_scaling.factor = float(state[LOSS_SCALE_FACTOR])
        optimizer.ipu_state_is_dirty = False

    def after_run(self) -> None:
        if self.optimizer is not None:
            self.optimizer.host_state_is_dirty = True

    def on_detach(self) -> None:
        """PopTorch reads the state back before the device goes."""
        if self.optimizer is not None:
            self.optimizer._ipu_entries()

    def on_attach(self) -> None:
        """PopTorch writes the host's state (read or loaded) to a device it attaches to."""
        optimizer = self.optimizer
        if optimizer is not None and (getattr(optimizer, "_ipu_cache", None) or {}).get(
                "ipu_state") is not None:
            optimizer.ipu_state_is_dirty = True
            self.before_run()

    def read(self) -> dict:
        state = state_tensors(self.optimizer, self.names, self.accumulation)
        if self.loss_scaling is not None:
            state[LOSS_SCALE_FACTOR] = torch.tensor(self.loss_scaling.factor)
        return {"ipu_state": state, "ipu_param": {k: v.clone() for k, v in self.params.items()}}

    def release(self) -> None:
        """The model is destroyed or given another optimizer: keep the last state on the host."""
        if self.optimizer is None:
            return
        self.optimizer._ipu_entries()
        self.optimizer._ipu_device = None
