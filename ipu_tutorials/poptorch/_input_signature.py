"""The inputs a compiled model accepts: the same structure, types, dtypes and shapes as the
inputs it was compiled with, and the same values for non-tensor arguments (which PopTorch
compiles into the graph as constants)."""
from __future__ import annotations

import inspect

import torch
from torch.utils import _pytree as pytree

from ..errors import Error

_WHY = ("\nThis error occurred because the inputs passed at runtime don't match the inputs used "
        "to compile the model. To recompile the model for the new inputs create a new "
        "inferenceModel / trainingModel wrapper or call destroy() on the current one and try "
        "again.")


def positional_names(model: torch.nn.Module, count: int) -> list[str]:
    """The forward() parameter names of the first `count` positional arguments."""
    try:
        params = list(inspect.signature(model.forward).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return [names[i] if i < len(names) else f"args[{i}]" for i in range(count)]


def check_inputs(model: torch.nn.Module, compiled: tuple, given: tuple) -> None:
    """Compare a call's (args, kwargs) with those the model was compiled with.

    Raises:
        Error: naming the first argument that differs, what was expected and what came.
    """
    (c_args, c_kwargs), (g_args, g_kwargs) = compiled, given
    if len(c_args) != len(g_args):
        raise Error(f"Number of positional arguments mismatch: expected {len(c_args)} "
                    f"arguments but got {len(g_args)}.{_WHY}")
    for name, c, g in zip(positional_names(model, len(c_args)), c_args, g_args):
        _check(name, c, g)
    _check_keys("named arguments", c_kwargs, g_kwargs)
    for key, c in c_kwargs.items():
        _check(key, c, g_kwargs[key])


def _check_keys(name: str, compiled: dict, given: dict) -> None:
    extra, missing = sorted(set(given) - set(compiled)), sorted(set(compiled) - set(given))
    details = ([f"Unexpected arguments: {', '.join(extra)}"] if extra else []) + (
        [f"Missing arguments: {', '.join(missing)}"] if missing else [])
    if details:
        raise Error(f"Keys mismatch for {name}: {'. '.join(details)}.{_WHY}")


def _check(name: str, compiled, given) -> None:
    if type(compiled) is not type(given) and not (
            isinstance(compiled, torch.Tensor) and isinstance(given, torch.Tensor)):
        raise Error(f"Type mismatch for {name}: expected {type(compiled)} but got "
                    f"{type(given)}.{_WHY}")
    if isinstance(compiled, torch.Tensor):
        if compiled.dtype != given.dtype:
            raise Error(f"Data type mismatch for {name}: expected {compiled.dtype} but got "
                        f"{given.dtype}.{_WHY}")
        if compiled.shape != given.shape:
            raise Error(f"Shape mismatch for {name}: expected {compiled.shape} but got "
                        f"{given.shape}.{_WHY}")
    elif isinstance(compiled, (list, tuple)):
        if len(compiled) != len(given):
            raise Error(f"Length mismatch for {name}: expected {len(compiled)} elements but "
                        f"got {len(given)}.{_WHY}")
        for i, (c, g) in enumerate(zip(compiled, given)):
            _check(f"{name}[{i}]", c, g)
    elif isinstance(compiled, dict):
        _check_keys(name, compiled, given)
        for key, c in compiled.items():
            _check(f"{name}[{key!r}]", c, given[key])
    elif type(compiled) in pytree.SUPPORTED_NODES:  # e.g. a type with a custom arg parser
        _check(name, pytree.tree_flatten(compiled)[0], pytree.tree_flatten(given)[0])
    elif compiled != given:
        raise Error(f"Value mismatch for {name}: expected {compiled} but got {given}.{_WHY}")
