"""Stands in for poptorch.poptorch_core, PopTorch's C++ extension, when its suite runs here.

Only `Error` has a meaning without the Poplar SDK; anything else raises an error that names it.
"""
from ipu_tutorials.poptorch import Error


import enum


class TestErrorType(enum.Enum):
    """The C++ extension's error kinds, named so that tests parametrized over them collect
    (each test then reaches `_throwTestError`, which only the SDK has)."""

    PoplarRecoverableFullReset = 0
    PoplarLinkError = 1
    PoplarUnrecoverable = 2


class SdkOnly(RuntimeError):
    """A test reached into PopTorch's C++ extension, which only the Poplar SDK provides."""


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    raise SdkOnly(f"poptorch_core.{name} is part of PopTorch's C++ extension (needs the Poplar SDK)")


__all__ = ["Error", "SdkOnly", "TestErrorType"]
