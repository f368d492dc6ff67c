"""Frozen control flow: the tensor values Python reads while tracing, replayed on every later run.

PopTorch compiles one static graph from the first inputs. Python code in `forward` that reads
a tensor's value (`if x.sum() > 0:`, `x.max().item()`, `int(n)`) runs only once, at trace time;
the graph keeps the path and the numbers of that one pass ("the graph will be frozen to whichever
control flow path was activated as a result of the first inputs", PopTorch user guide,
"Constraints"). The simulator runs the numerics eagerly, so it records each value read during
capture and gives the same answers back on every later micro-batch: the branch stays frozen.
"""
from __future__ import annotations

import dataclasses
import os
import traceback

import torch
from torch.overrides import TorchFunctionMode

from ..errors import Error

# Tensor methods through which Python reads a tensor's value.
READS = frozenset({"__bool__", "item", "__int__", "__float__", "__index__", "tolist"})
# Frames in these packages are not the learner's code (ipu_tutorials, torch).
_LIBRARY_DIRS = (os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,
                 os.path.dirname(os.path.abspath(torch.__file__)) + os.sep)


@dataclasses.dataclass(frozen=True)
class ValueRead:
    """One read of a tensor's value by Python code, as captured at trace time."""

    method: str  # "__bool__", "item", ...
    value: object  # what Python got back, replayed on every later run
    code: str  # the source line that read it, e.g. "if x.sum() > 0:"
    function: str  # the function that line is in, e.g. "forward"
    line: int

    def describe(self) -> str:
        where = f"line {self.line}, in {self.function}"
        if self.code:
            return f"`{self.code}` ({where}) read {self.value!r}"
        return f"{where}: Tensor.{self.method} read {self.value!r}"


def _user_frame() -> traceback.FrameSummary | None:
    """The innermost frame outside torch and this package: the learner's line."""
    for frame in reversed(traceback.extract_stack()):
        if not frame.filename.startswith(_LIBRARY_DIRS):
            return frame
    return None


class Recording(TorchFunctionMode):
    """Lets every value read through and remembers what it returned."""

    def __init__(self):
        super().__init__()
        self.reads: list[ValueRead] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = getattr(func, "__name__", "")
        if name in READS:
            frame = _user_frame()
            self.reads.append(ValueRead(name, out, (frame.line or "").strip() if frame else "?",
                                        frame.name if frame else "?",
                                        frame.lineno if frame else 0))
        return out


class Replaying(TorchFunctionMode):
    """Answers each value read with the value captured at trace time, in the same order."""

    def __init__(self, reads: tuple[ValueRead, ...]):
        super().__init__()
        self.reads, self.next = reads, 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name not in READS:
            return func(*args, **(kwargs or {}))
        if self.next >= len(self.reads) or self.reads[self.next].method != name:
            raise Error(f"forward read tensor values in another order than when it was traced "
                        f"({len(self.reads)} read(s) then: {describe(self.reads)}). The compiled "
                        f"graph is static: make forward's Python control flow independent of "
                        f"tensor values and of state that changes between calls (torch.where "
                        f"selects between both results on the device).")
        read = self.reads[self.next]
        self.next += 1
        return read.value


def describe(reads: tuple[ValueRead, ...]) -> str:
    return "; ".join(read.describe() for read in reads) or "none"


def frozen_warning(reads: tuple[ValueRead, ...]) -> str:
    """The warning compile gives when forward's Python code reads tensor values."""
    return (f"forward reads tensor values in Python: {describe(reads)}. PopTorch traces the "
            f"model once, so the graph is frozen to these values: every later call takes the "
            f"same branch and uses the same numbers, whatever its inputs. Compute on the "
            f"device instead (e.g. torch.where(condition, a, b) rather than `if`).")
