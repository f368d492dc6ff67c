"""poptorch.Options as PopTorch's flat backend dictionary (toDict), and back (from_flat).

Both walk the declarations (`_declared.Option`): each option writes its entries (`to_flat`)
and reads them back (`from_flat`); the groups PopTorch merges are the Options' `Group`s with
flat=True. What no declaration claims is a PopART option.
"""
from __future__ import annotations

from ._declared import declared, groups
from .strategies import PipelinedExecution, SerialPhasedExecution, ShardedExecution

# PopTorch's backendOptions(): the execution strategy as a number.
_EXECUTION_MODES = {PipelinedExecution: 0, ShardedExecution: 1}


def strategy_entries(strategy) -> dict:
    """The strategy as PopTorch's backendOptions() gives it: execution_mode and, when phased,
    its backward phase, liveness and kind."""
    mode = _EXECUTION_MODES.get(type(strategy))
    if mode is not None:
        return {"execution_mode": mode}
    return {"execution_mode": 2, "separate_backward_phase": strategy._separate_backward_phase,
            "tensors_liveness": strategy._tensors_liveness.value,
            "serial_phases_execution": isinstance(strategy, SerialPhasedExecution)}


def strategy_from_entries(data: dict):
    """A pipelined or sharded strategy from its entries; a phased one cannot be rebuilt."""
    mode = data.get("execution_mode", 0)
    if mode not in (0, 1):
        raise ValueError(f"from_flat(): execution_mode={mode!r} (phased execution) cannot "
                         f"be rebuilt from a dict: its phases are not in it. Set the strategy with "
                         f"setExecutionStrategy() afterwards.")
    return ShardedExecution() if mode == 1 else PipelinedExecution()


def _flat_groups(options) -> list:
    """The Options themselves, then each group PopTorch merges into the flat dict."""
    return [options, *(getattr(options, g.name) for g in groups(type(options)) if g.flat)]


def to_flat(options) -> dict:
    """One flat dict: the PopART options, then every declared option's entries (which win over
    a PopART option of the same name, as PopTorch's order has it)."""
    out = {}
    for group in _flat_groups(options)[::-1]:  # the last merged wins: the Options' own
        out.update(group._flat_entries())
    return out


def from_flat(options_cls, data: dict):
    """Options whose toDict() equals `data` (a dict toDict() returned)."""
    if not isinstance(data, dict):
        raise TypeError(f"from_flat() expects a dict from Options.toDict(), got "
                        f"{type(data).__name__}")
    options = options_cls()
    left = dict(data)
    for group in _flat_groups(options):
        for option in declared(type(group)):
            if any(key in left for key in option.flat_keys):
                value = option.from_flat(left)
                for key in option.flat_keys:
                    left.pop(key, None)
                group._store({option.name: value})
    for key, value in left.items():
        options._Popart.set(key, value)
    return options
