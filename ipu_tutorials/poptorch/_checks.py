"""Argument checks shared by the facade: each error names the argument, the rule and the value."""
from __future__ import annotations

import enum
import functools
import math


def check_int(where: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{where} expects an integer, got {type(value).__name__} {value!r}")
    if value < minimum:
        rule = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise ValueError(f"{where} must be {rule}, got {value}")
    return value


def check_bool(where: str, value) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{where} expects True or False, got {type(value).__name__} {value!r}")
    return value


def check_enum(where: str, value, enum_type: type[enum.Enum]):
    if isinstance(value, enum_type):
        return value
    names = ", ".join(f"{enum_type.__name__}.{m.name}" for m in enum_type)
    raise TypeError(f"{where} expects one of {names}; got {value!r}")


def one_of(enum_type: type[enum.Enum]):
    """check_enum for one enum, as an option's declared check: (where, value) -> value."""
    return functools.partial(check_enum, enum_type=enum_type)


def check_fraction(where: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{where} expects a number between 0 and 1, got {value!r}")
    if not 0.0 < value <= 1.0:
        raise ValueError(f"{where} must be in (0, 1], got {value}")
    return float(value)


def check_str(where: str, value) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{where} expects a string, got {type(value).__name__} {value!r}")
    return value


def check_finite_hyperparameters(where: str, param_groups: list[dict]) -> None:
    """Every number in an optimizer's groups (lr, momentum, betas, eps, ...) is finite: a NaN
    or infinite learning rate would silently turn every weight into NaN at the first update."""
    for index, group in enumerate(param_groups):
        for name, value in group.items():
            numbers = value if isinstance(value, (tuple, list)) and name != "params" else [value]
            for number in numbers:
                if isinstance(number, float) and not math.isfinite(number):
                    raise ValueError(f"{where}: {name} must be a finite number, got {value!r} "
                                     f"(param group {index}); give a real value such as "
                                     f"{name}=0.001")
