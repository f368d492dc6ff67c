"""poptorch.Options as PopTorch's flat backend dictionary (toDict), and back (fromDict)."""
from __future__ import annotations

import enum

from .strategies import PipelinedExecution, SerialPhasedExecution, ShardedExecution

# PopTorch's backendOptions(): the execution strategy as a number.
_EXECUTION_MODES = {PipelinedExecution: 0, ShardedExecution: 1}
_FLAT_GROUPS = ("Training", "Distributed", "TensorLocations")  # PopTorch leaves out Precision and Jit
_STRATEGY_KEYS = ("execution_mode", "separate_backward_phase", "tensors_liveness",
                  "serial_phases_execution")


def _backend_value(value):
    """Enums become their values (as PopTorch stores them); containers are copied."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {k: _backend_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_backend_value(v) for v in value)
    return value


def strategy_entries(strategy) -> dict:
    mode = _EXECUTION_MODES.get(type(strategy))
    if mode is not None:
        return {"execution_mode": mode}
    return {"execution_mode": 2, "separate_backward_phase": strategy.separate_backward_phase,
            "tensors_liveness": strategy.liveness.value,
            "serial_phases_execution": isinstance(strategy, SerialPhasedExecution)}


def to_flat(options) -> dict:
    """One flat dict: strategy, PopART options, Options' own values, then the flat groups."""
    out = strategy_entries(options._strategy)
    out.update(_backend_value(options._groups["_Popart"]._values))
    for key, value in options._values.items():
        if key == "executable_cache_dir":
            if value is not None:
                out.update(cachePath=value, enableEngineCaching=True)
        elif value is not None:
            out[key] = _backend_value(value)
    for name in _FLAT_GROUPS:
        out.update(_backend_value(options._groups[name]._values))
    return out


def _restore(default, value):
    """A value read back into the type of the option's default (an enum from its value)."""
    return type(default)(value) if isinstance(default, enum.Enum) else value


def _owner(options, key: str):
    for name in _FLAT_GROUPS:
        group = options._groups[name]
        if key in group._defaults or (name == "TensorLocations" and key.startswith("location_")):
            return group
    return options if key in options._defaults else options._groups["_Popart"]


def from_flat(options_cls, data: dict):
    """Options whose toDict() equals `data` (a dict toDict() returned)."""
    if not isinstance(data, dict):
        raise TypeError(f"Options.fromDict() expects a dict from Options.toDict(), got "
                        f"{type(data).__name__}")
    mode = data.get("execution_mode", 0)
    if mode not in (0, 1):
        raise ValueError(f"Options.fromDict(): execution_mode={mode!r} (phased execution) cannot "
                         f"be rebuilt from a dict: its phases are not in it. Set the strategy with "
                         f"setExecutionStrategy() after fromDict().")
    options = options_cls()
    options.setExecutionStrategy(ShardedExecution() if mode == 1 else PipelinedExecution())
    for key, value in data.items():
        if key in _STRATEGY_KEYS or key == "enableEngineCaching":
            continue
        if key == "cachePath":
            options._set("executable_cache_dir", value)
            continue
        owner = _owner(options, key)
        owner._set(key, _restore(owner._defaults.get(key), value))
    return options
