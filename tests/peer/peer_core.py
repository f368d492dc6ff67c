"""Stands in for poptorch.poptorch_core, PopTorch's C++ extension, when its suite runs here.

Only `Error` and `isCompilingWithDispatcher` have a meaning without the Poplar SDK; anything
else raises an error that names it.
"""
import enum

from ipu_tutorials.poptorch import Error
from ipu_tutorials.simulator import tracing


class TestErrorType(enum.Enum):
    """The C++ extension's error kinds, named so that tests parametrized over them collect
    (each test then reaches `_throwTestError`, which only the SDK has)."""

    PoplarRecoverableFullReset = 0
    PoplarLinkError = 1
    PoplarUnrecoverable = 2


def isCompilingWithDispatcher() -> bool:
    """Whether a compile is under way: PopTorch's tests check that a failed compile ends it."""
    return tracing.STATE.capture is not None


class SdkOnly(RuntimeError):
    """A test reached into PopTorch's C++ extension, which only the Poplar SDK provides."""


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    raise SdkOnly(f"poptorch_core.{name} is part of PopTorch's C++ extension (needs the Poplar SDK)")


__all__ = ["Error", "SdkOnly", "TestErrorType", "isCompilingWithDispatcher"]
