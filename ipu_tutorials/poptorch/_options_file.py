"""Options files and JSON: their text read safely, each line parsed and applied as setter calls.

Options.loadFromFile reads PopTorch's format (one setter call per line, without `options.`)
by parsing each line, never by evaluating it; a `.json` or `.toml` file (and from_json's
text) holds a table of {"methodName": argument or [arguments]} instead. A line may call only
the setters the options' declarations name (`_declared.setters`), with literals, poptorch
enums, strategies and TensorLocationSettings, and torch dtypes as arguments, so a file cannot
reach anything that runs code (no `torch.load`, no `__class__`, no `os`).
"""
from __future__ import annotations

import ast
import json
import os

import torch

from ..support.atomic_io import FileFormatError, read_json
from ._declared import _OptionGroup, setters

ALLOWED_PRIVATE = ("_Popart",)  # PopTorch's own examples set PopART flags through it
TABLE_SUFFIXES = (".json", ".toml")


def check_name(dotted: str) -> None:
    """A name an options file may use: public (or _Popart), never a dunder.

    Raises:
        ValueError: naming the part that is refused.
    """
    for part in dotted.split("."):
        if part.startswith("_") and part not in ALLOWED_PRIVATE:
            raise ValueError(f"{dotted!r} names the private attribute {part!r}; an options file "
                             f"may only call public setters such as deviceIterations(4)")


def torch_value(name: str):
    """torch.<name> when it is a dtype (torch.float16), else None: nothing else of torch."""
    value = getattr(torch, name, None) if name.isidentifier() else None
    return value if isinstance(value, torch.dtype) else None


def read_lines(filepath: str | os.PathLike) -> list[str]:
    """The file's lines, with a clear error for an unreadable or binary file."""
    try:
        with open(filepath, "rb") as handle:
            data = handle.read()
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError as error:
        raise FileFormatError(f"{os.fspath(filepath)} is not an options file: it is not UTF-8 "
                              f"text ({error.reason} at byte {error.start})") from None


def read_table(filepath: str | os.PathLike) -> dict:
    """A .json or .toml options file as {"methodName": argument(s)}."""
    path = os.fspath(filepath)
    if path.endswith(".json"):
        table = read_json(path, "JSON options file")
    else:
        table = _read_toml(path)
    if not isinstance(table, dict):
        raise FileFormatError(f"{path} must hold an object of method: argument pairs such as "
                              f'{{"deviceIterations": 4}}, got a {type(table).__name__}')
    return table


def _read_toml(path: str) -> dict:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        raise FileFormatError(f"{path}: reading TOML needs Python 3.11 or later; write the "
                              f"options as JSON instead") from None
    lines = read_lines(path)
    try:
        return tomllib.loads("\n".join(lines))
    except (tomllib.TOMLDecodeError, RecursionError) as error:
        raise FileFormatError(f"{path} is not a valid TOML options file ({error})") from None


def parse_json_text(text: str):
    """Options JSON given as text (POPTORCH_DEFAULT_OPTIONS or from_json)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"options JSON is not valid JSON ({error}): {text[:200]!r}") from None
    except RecursionError:
        raise ValueError(f"options JSON is nested too deeply: {text[:200]!r}") from None


# --- applying the calls ------------------------------------------------------------------------
def apply_json(options, text: str):
    """Apply from_json's (or POPTORCH_DEFAULT_OPTIONS') table of calls; returns the options."""
    calls = parse_json_text(text)
    if not isinstance(calls, dict):
        raise ValueError(f"options JSON must be an object of method: argument pairs, got {text!r}")
    return apply_table(options, calls)


def apply_table(options, calls: dict):
    """Call each {"Group.methodName": argument or [arguments]}; "OutputMode.All" is the enum."""
    for name, args in calls.items():
        args = args if isinstance(args, list) else [args]
        setter(options, name)(*[_json_arg(a) for a in args])
    return options


def apply_file(options, filepath):
    """Apply an options file: a table (.json, .toml) or one setter call per line."""
    if str(filepath).endswith(TABLE_SUFFIXES):
        return apply_table(options, read_table(filepath))
    for number, line in enumerate(read_lines(filepath), 1):
        line = line.strip()
        if line and not line.startswith("#"):
            _apply_line(options, line, f"{filepath}:{number}")
    return options


def setter(options, dotted: str):
    """The bound setter "Group.methodName" names; any other name is an error saying why."""
    check_name(dotted)
    *path, name = dotted.split(".")
    target = options
    for part in path:
        target = getattr(target, part, None)
        if not isinstance(target, _OptionGroup):
            break
    if isinstance(target, _OptionGroup) and name in setters(type(target)):
        return getattr(target, name)
    if isinstance(target, _OptionGroup) and hasattr(target, name):
        raise ValueError(f"{dotted!r} is not an option method")
    raise ValueError(f"unknown option method {dotted!r}; name a setter such as "
                     f"'deviceIterations' or 'Training.gradientAccumulation'")


def _apply_line(options, line: str, where: str) -> None:
    try:
        call = ast.parse(line, mode="eval").body
    except SyntaxError:
        raise ValueError(f"{where}: expected a call such as deviceIterations(4), "
                         f"got {line!r}") from None
    if not isinstance(call, ast.Call):
        raise ValueError(f"{where}: expected a call such as deviceIterations(4), got {line!r}")
    _run_call(options, call, where)


def _run_call(options, call: ast.Call, where: str):
    """Run one setter call; a chain such as replicationFactor(2).deviceIterations(4) too."""
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call):
        target = _run_call(options, func.value, where)
        if not (isinstance(target, _OptionGroup) and func.attr in setters(type(target))):
            raise ValueError(f"{where}: unknown option method {func.attr!r} in "
                             f"{ast.unparse(call)!r}")
        method = getattr(target, func.attr)
    else:
        try:
            method = setter(options, ast.unparse(func))
        except ValueError as error:
            raise ValueError(f"{where}: {error}") from None
    args = [_eval_literal(a, where) for a in call.args]
    kwargs = {k.arg: _eval_literal(k.value, where) for k in call.keywords}
    return method(*args, **kwargs)


def _json_arg(value):
    """Turn "OutputMode.All"-style strings into enum members; leave other values alone."""
    from . import enums

    if isinstance(value, str) and "." in value:
        enum_name, _, member = value.partition(".")
        enum_type = getattr(enums, enum_name, None)
        if enum_type is not None and member in enum_type.__members__:
            return enum_type[member]
    return value


def _facade_names() -> dict:
    """What an options file may name after `poptorch.`: enums, strategies, location settings."""
    from . import enums, strategies
    from .tensor_locations import TensorLocationSettings

    names = {n: getattr(m, n) for m in (enums, strategies) for n in dir(m) if n[0].isupper()}
    names["TensorLocationSettings"] = TensorLocationSettings
    return names


def _resolve(path: str, where: str, shown: str):
    """poptorch.Name.Member (or a torch dtype such as torch.float16) -> the object it names."""
    check_name(path)
    first, *rest = path.split(".")
    target = _facade_names().get(first)
    for part in rest:
        target = getattr(target, part, None) if target is not None else None
    if target is None:
        target = torch_value(path)
    if target is None:
        raise ValueError(f"{where}: unknown name {shown!r}")
    return target


def _eval_literal(node: ast.AST, where: str):
    """Literals, plus poptorch.Name(...) calls and poptorch.Enum.Member attributes."""
    if isinstance(node, ast.Call):
        func = _eval_literal(node.func, where)
        if not isinstance(func, type):  # poptorch.ShardedExecution(...), never a function
            raise ValueError(f"{where}: only poptorch classes can be called, not "
                             f"{ast.unparse(node.func)!r}")
        return func(*[_eval_literal(a, where) for a in node.args],
                    **{k.arg: _eval_literal(k.value, where) for k in node.keywords})
    if isinstance(node, ast.Attribute):
        path = ast.unparse(node).removeprefix("poptorch.").removeprefix("torch.")
        return _resolve(path, where, ast.unparse(node))
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise ValueError(f"{where}: cannot read {ast.unparse(node)!r} as a value") from None
