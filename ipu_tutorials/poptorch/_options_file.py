"""What an options file may say: its text read safely, tables parsed, names checked.

Options.loadFromFile reads PopTorch's format (one setter call per line, without `options.`)
by parsing each line, never by evaluating it; a `.json` or `.toml` file holds a table of
{"methodName": argument or [arguments]} instead. Only public setters, literals, poptorch
enums and strategies and torch dtypes can be named, so a file cannot reach anything that
runs code (no `torch.load`, no `__class__`, no `os`).
"""
from __future__ import annotations

import json
import os

import torch

from ..atomic_io import FileFormatError, read_json

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
