"""Floating-point exceptions: stop a run at the first op that creates an infinity or a NaN.

With opts.Precision.enableFloatingPointExceptions(True) the IPU traps, and PopTorch raises, at
the first op that divides by zero, overflows, computes an invalid result (inf - inf, 0 x inf,
the square root of a negative number) or compares a NaN. The simulator checks each op's
result as it runs (after float16 rounding, so an overflow to float16's infinity counts) and
names the op, the module whose forward pass ran it and the micro-batch. Its rule: an op that
turns finite inputs into an infinity, or NaN-free inputs into a NaN, or compares a NaN.
"""
from __future__ import annotations

import contextlib

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ..errors import Error

aten = torch.ops.aten
_UNINITIALISED = "empty"  # empty, empty_like, new_empty_strided...: memory not yet written
_COMPARISONS = {aten.eq, aten.ne, aten.gt, aten.ge, aten.lt, aten.le, aten.maximum, aten.minimum}


class FloatingPointException(Error):
    """The first op that produced an infinity or a NaN; `op` and `module` say where."""

    def __init__(self, message: str, op: str, module: str):
        super().__init__(message)
        self.op, self.module = op, module


def _floats(values) -> list[torch.Tensor]:
    found = []
    for v in values:
        if isinstance(v, (list, tuple)):
            found += _floats(v)
        elif isinstance(v, torch.Tensor) and v.is_floating_point() and v.numel():
            found.append(v)
    return found


def _kind(had_nan: bool, had_inf: bool, outputs: list[torch.Tensor]) -> str | None:
    """Which exception the op raises, or None: invalid operation, or overflow/division by zero
    (judged against whether its inputs already held NaNs or infinities)."""
    if not had_nan and any(bool(t.isnan().any()) for t in outputs):
        return "an invalid operation (NaN result)"
    if not had_inf and any(bool(t.isinf().any()) for t in outputs):
        return "an overflow or a division by zero (infinite result)"
    return None


class FloatingPointChecks(TorchDispatchMode):
    """Raises FloatingPointException at the first op whose result breaks the rule above."""

    def __init__(self, describe_place):
        super().__init__()
        self.describe_place = describe_place  # () -> the running module's name, "" in backward

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if _UNINITIALISED in func.overloadpacket.__name__:  # garbage, written before it is read
            return func(*args, **kwargs)
        inputs = _floats([*args, *kwargs.values()])
        finite = all(bool(t.isfinite().all()) for t in inputs)  # the common case: one test
        had_nan = not finite and any(bool(t.isnan().any()) for t in inputs)
        had_inf = not finite and any(bool(t.isinf().any()) for t in inputs)
        if had_nan and func.overloadpacket in _COMPARISONS:
            self._raise(func, "a comparison with a NaN operand")
        out = func(*args, **kwargs)
        outputs = _floats(out if isinstance(out, (list, tuple)) else [out])
        if not all(bool(t.isfinite().all()) for t in outputs):
            kind = _kind(had_nan, had_inf, outputs)
            if kind is not None:
                self._raise(func, kind)
        return out

    def _raise(self, func, kind: str) -> None:
        op = func.overloadpacket.__name__
        module = self.describe_place()
        where = f"the forward pass of module '{module}'" if module else "the backward pass"
        raise FloatingPointException(
            f"Floating-point exception: {op} (aten.{func.__name__}) in {where} "
            f"produced {kind}. Rule: with "
            f"Precision.enableFloatingPointExceptions(True) the IPU stops at the first op that "
            f"overflows, divides by zero or computes an invalid value. Fix that op (keep its "
            f"inputs in range, e.g. subtract the maximum before exp, or compute it in float32), "
            f"or turn the option off to let infinities and NaNs flow on.", op, module)


class ModuleTracker:
    """The innermost module whose forward pass is running (global module hooks); the backward
    pass runs outside every module, so it has none."""

    def __init__(self, model: torch.nn.Module):
        self.names = {m: n or type(model).__name__ for n, m in model.named_modules()}
        self.stack: list[str] = []
        self.backward = False

    def place(self) -> str:
        return "" if self.backward else (self.stack[-1] if self.stack else "(top level)")

    @contextlib.contextmanager
    def hooks(self):
        pre = torch.nn.modules.module.register_module_forward_pre_hook(self._enter)
        post = torch.nn.modules.module.register_module_forward_hook(self._leave)
        try:
            yield self
        finally:
            pre.remove()
            post.remove()

    def _enter(self, module, args):
        if module in self.names:
            self.backward = False  # a new micro-batch's forward pass
            self.stack.append(self.names[module])

    def _leave(self, module, args, output):
        if module in self.names and self.stack:
            self.stack.pop()


@contextlib.contextmanager
def checks(active: bool, model: torch.nn.Module):
    """Check every op of a run when `active` (enter it inside the float16 emulation, so the
    check sees rounded results); yields a function that marks the backward pass."""
    if not active:
        yield lambda: None
        return
    tracker = ModuleTracker(model)

    def start_backward():
        tracker.backward = True

    with tracker.hooks(), FloatingPointChecks(tracker.place):
        yield start_backward
