"""Rules on option values that Options, the executor and the simulator door share, one place each.

It sits below both options.py and _to_simulator.py, so neither imports the other for a rule.
It reads only the simulator's hardware description (which chips exist), never its runs.
"""
from __future__ import annotations

from ..simulator.hardware import ipu_spec
from .enums import OutputMode


def check_version(ipu_version: int) -> int:
    """Return the version; raise ValueError, listing the known ones, for a chip the simulator lacks."""
    ipu_spec(ipu_version)
    return ipu_version


def resolved_output_mode(mode: OutputMode, training: bool) -> OutputMode:
    """OutputMode.Default means Final for a training model and All for an inference model."""
    if mode == OutputMode.Default:
        return OutputMode.Final if training else OutputMode.All
    return mode
