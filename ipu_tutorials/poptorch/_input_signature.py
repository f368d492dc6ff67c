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


def _parameters(model) -> list[inspect.Parameter] | None:
    """forward's parameters, or None when Python cannot say (a builtin): then *args, **kwargs."""
    try:
        return list(inspect.signature(getattr(model, "forward", model)).parameters.values())
    except (TypeError, ValueError):
        return None


def bind(model: torch.nn.Module, args: tuple, kwargs: dict) -> tuple[list, dict]:
    """A call's inputs as PopTorch's argument parser sees them: ([(name, value), ...], named).

    Each of forward's parameters in order takes its positional value, else its keyword value,
    else its default, and is positional until a *args parameter; after it, parameters are
    named, and a **kwargs parameter takes the remaining keywords. So `f(x, t=None)` and
    `f(x, None)` bind alike, and an optional input left out binds its default.

    Raises:
        Error: a parameter without a default is given no value.
    """
    params = _parameters(model)
    if params is None:
        return [(f"*args[{i}]", a) for i, a in enumerate(args)], dict(kwargs)
    _check_fits(params, args, kwargs)
    positional, named, after_star = [], {}, False
    args = list(args)
    for i, p in enumerate(params):
        if p.kind == p.VAR_KEYWORD:
            used = {q.name for q in params[:i]}
            named.update((k, v) for k, v in kwargs.items() if k not in used)
        elif p.kind == p.VAR_POSITIONAL:
            positional += [(f"*{p.name}[{j}]", a) for j, a in enumerate(args[i:])]
            args, after_star = [], True
        elif i < len(args):
            positional.append((p.name, args[i]))
        else:
            value = _given_or_default(p, kwargs)
            if after_star:
                named[p.name] = value
            else:
                positional.append((p.name, value))
    return positional, named


def _check_fits(params: list[inspect.Parameter], args: tuple, kwargs: dict) -> None:
    """Without *args / **kwargs, forward takes only so many values, and only its names."""
    kinds = {p.kind for p in params}
    names = [p.name for p in params]
    variadic = kinds & {inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD}
    # PopTorch's argument parser asserts both rules (python/_args_parser.py)
    assert variadic or len(args) + len(kwargs) <= len(params), (
        f"Too many arguments provided: expected {names} ({len(names)}) but got "
        f"{len(args) + len(kwargs)}")
    unknown = [k for k in kwargs if k not in names]
    assert inspect.Parameter.VAR_KEYWORD in kinds or not unknown, (
        f"{unknown[0] if unknown else ''} is not a valid parameter. Allowed values are {names}")


def _given_or_default(param: inspect.Parameter, kwargs: dict):
    if param.name in kwargs:
        return kwargs[param.name]
    if param.default is inspect.Parameter.empty:
        raise Error(f"Mandatory parameter {param.name} missing")
    return param.default


def check_inputs(model: torch.nn.Module, compiled: tuple, given: tuple) -> None:
    """Compare a call's (args, kwargs) with those the model was compiled with, both bound to
    forward's parameters as PopTorch binds them (bind).

    Raises:
        Error: naming the first argument that differs, what was expected and what came.
    """
    (c_args, c_kwargs), (g_args, g_kwargs) = bind(model, *compiled), bind(model, *given)
    if len(c_args) != len(g_args):
        raise Error(f"Number of positional arguments mismatch: expected {len(c_args)} "
                    f"arguments but got {len(g_args)}.{_WHY}")
    for (name, c), (_, g) in zip(c_args, g_args):
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
                        f"{given.shape}.{_batch_hint(compiled.shape, given.shape)}{_WHY}")
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


def _batch_hint(compiled: torch.Size, given: torch.Size) -> str:
    """When only the leading (batch) dimension changed, say how to keep it fixed."""
    if len(compiled) == len(given) >= 1 and compiled[1:] == given[1:]:
        return (" Only the batch dimension changed: keep the batch size fixed (a "
                "poptorch.DataLoader with drop_last=True does).")
    return ""


def check_not_zero_sized(model: torch.nn.Module, args: tuple, kwargs: dict) -> None:
    """PopTorch copies every input, weight and buffer to the IPU when it compiles, and refuses
    an empty one (a dimension of 0), even where PyTorch would run the op.

    Raises:
        Error: the first empty tensor, with its shape.
    """
    tensors = [t for t in pytree.tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
    for tensor in [*tensors, *model.parameters(), *model.buffers()]:
        if not torch.nn.parameter.is_lazy(tensor) and 0 in tensor.shape:
            raise Error(f"Zero-sized tensors are unsupported (Got shape "
                        f"[{', '.join(map(str, tensor.shape))}]). Give every input, weight and "
                        f"buffer a size of at least 1 in each dimension.")
