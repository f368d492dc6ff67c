"""The text layout of ipu_print_tensor, as Poplar prints a tensor (to standard error).

A tensor of two or more dimensions opens its bracket, prints each sub-tensor on its own line
indented one space per level, and closes the bracket on a line of its own; a vector prints its
elements joined by the separator, wrapping at `max_line_width`; numbers carry `digits`
significant digits.
"""
from __future__ import annotations

import numpy as np
import torch


def format_number(x: float, digits: int, style: str) -> str:
    if style == "scientific":
        return f"{x:.{max(digits - 1, 0)}e}"
    if style == "fixed":
        return np.format_float_positional(x, precision=digits, unique=False, fractional=False,
                                          trim="-")
    if style == "none":
        return repr(float(x))
    return f"{x:.{digits}g}"


def _elements(values: list, options: dict) -> list[str]:
    """The vector's items, with the middle summarised as "..." when the tensor is large."""
    edge = options["edge_items"]
    text = [format_number(v, options["digits"], options["float_format"]) for v in values]
    if options["summarise"] and len(text) > 2 * edge:
        return text[:edge] + ["..."] + text[-edge:]
    return text


def _vector(values: list, depth: int, options: dict) -> str:
    sep, width = options["separator"], options["max_line_width"]
    items = _elements(values, options)
    lines, line = [], options["open_bracket"]
    for i, item in enumerate(items):
        piece = item + (sep if i < len(items) - 1 else options["close_bracket"])
        if i and depth + len(line) + len(piece) > width:
            lines.append(line)
            line = " " * (depth + 2)
        line += piece
    return "\n".join(lines + [line])


def _layout(array: np.ndarray, depth: int, options: dict) -> str:
    if array.ndim == 0:
        return format_number(float(array), options["digits"], options["float_format"])
    if array.ndim == 1:
        return _vector(array.tolist(), depth, options)
    rows = list(array)
    edge = options["edge_items"]
    if options["summarise"] and len(rows) > 2 * edge:
        rows = rows[:edge] + [None] + rows[-edge:]
    indent = " " * (depth + 1)
    body = [indent + ("..." if r is None else _layout(r, depth + 1, options)) for r in rows]
    return "\n".join([options["open_bracket"], *body, " " * depth + options["close_bracket"]])


def format_tensor(t: torch.Tensor, options: dict) -> str:
    """The tensor laid out as Poplar prints it, under ipu_print_tensor's options."""
    array = t.detach().float().cpu().numpy()
    return _layout(array, 0, dict(options, summarise=array.size > options["summarise_threshold"]))
