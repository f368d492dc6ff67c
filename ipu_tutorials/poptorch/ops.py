"""PopTorch's model-level ops and utilities, with their CPU and simulated-IPU behaviour."""
from __future__ import annotations

import logging
import sys

import torch

from ..errors import Error
from ..support import environment
from ._logging import install_handler, to_stderr
from ._to_simulator import tracing
from ._checks import check_fraction, check_int, check_str
from ._print_layout import format_tensor
from .enums import MatMulSerializationMode, MultiConvPlanType

logger = logging.getLogger("poptorch")
LOG_LEVELS = {"TRACE": logging.DEBUG - 5, "TRACE_ALL": logging.DEBUG - 5, "DEBUG": logging.DEBUG,
              "INFO": logging.INFO, "WARN": logging.WARNING, "ERR": logging.ERROR,
              "OFF": logging.CRITICAL + 10}


LEGACY_LOG_LEVELS = {0: "TRACE", 1: "DEBUG", 2: "INFO", 3: "WARN", 4: "ERR", 6: "OFF"}


def setLogLevel(level: str | int) -> None:
    """Set PopTorch's log level: TRACE, DEBUG, INFO, WARN, ERR or OFF, or PopTorch's legacy
    integers 0 (TRACE) to 4 (ERR) and 6 (OFF).

    Raises:
        ValueError: for an unknown name or integer.
    """
    if isinstance(level, int) and not isinstance(level, bool):
        if level not in LEGACY_LOG_LEVELS:
            raise ValueError(f"Invalid log level integer {level}: use 0 (TRACE), 1 (DEBUG), "
                             f"2 (INFO), 3 (WARN), 4 (ERR) or 6 (OFF)")
        level = LEGACY_LOG_LEVELS[level]
    if not isinstance(level, str) or level.upper() not in LOG_LEVELS:
        valid = sorted(n for n in LOG_LEVELS if n != "TRACE_ALL")
        raise ValueError(f"Unknown log level: {level}. Valid values are "
                         f"{', '.join(valid[:-1])} and {valid[-1]}")
    logger.setLevel(LOG_LEVELS[level.upper()])
    install_handler()


if environment.read().log_level:  # read once, when poptorch is first imported
    setLogLevel(environment.read().log_level)


def isRunningOnIpu() -> bool:
    """True inside a wrapped model's forward pass (on the simulated IPU), False on the CPU."""
    return tracing.STATE.on_ipu


def ipuHardwareIsAvailable(num_ipus: int = 1) -> bool:
    """Always False: the IPUs here are simulated (ipu_tutorials.default_system() describes them)."""
    check_int("ipuHardwareIsAvailable()", num_ipus)
    return False


def ipuHardwareVersion() -> int:
    """-1, PopTorch's answer when no IPU hardware is attached."""
    return -1


# --- printing --------------------------------------------------------------------------------
class _PrintTensor(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, title, print_gradient, options):
        ctx.title, ctx.print_gradient, ctx.options = title, print_gradient, options
        text = format_tensor(tensor, options)
        to_stderr(f"{title}: {text}" if title else text)
        return tensor.clone()

    @staticmethod
    def backward(ctx, grad):
        if ctx.print_gradient:
            to_stderr(f"{ctx.title}_gradient: {format_tensor(grad, ctx.options)}")
        return grad, None, None, None


def ipu_print_tensor(tensor: torch.Tensor, title: str = "", print_gradient: bool = True,
                     summarise_threshold: int = 1000, edge_items: int = 3,
                     max_line_width: int = 80, digits: int = 4, float_format: str = "auto",
                     separator: str = ", ", open_bracket: str = "(", close_bracket: str = ")"):
    """Print `tensor` each time the IPU computes it, and its gradient in the backward pass.

    Returns a copy of the tensor: use the result, or the print is optimised away. On the CPU it
    prints nothing, as in PopTorch.
    """
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"ipu_print_tensor expects a torch.Tensor, got {type(tensor).__name__}")
    if float_format not in ("auto", "fixed", "scientific", "none"):
        raise ValueError(f"float_format must be 'auto', 'fixed', 'scientific' or 'none', "
                         f"got {float_format!r}")
    if not tracing.STATE.on_ipu or tracing.STATE.capture is not None:
        return tensor.clone()
    options = dict(summarise_threshold=summarise_threshold, edge_items=edge_items,
                   max_line_width=max_line_width, digits=digits, float_format=float_format,
                   separator=separator,
                   open_bracket=open_bracket, close_bracket=close_bracket)
    return _PrintTensor.apply(tensor, check_str("title", title), print_gradient, options)


# --- losses and markers ------------------------------------------------------------------------
def identity_loss(x: torch.Tensor, reduction: str) -> torch.Tensor:
    """Mark `x` as the model's loss; backward starts here with a gradient of ones.

    reduction: "sum", "mean" or "none" (x is returned unreduced).
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"identity_loss expects a torch.Tensor, got {type(x).__name__}")
    reducers = {"sum": torch.sum, "mean": torch.mean, "none": torch.clone}
    # PopTorch asserts the reduction ("Unsupported reduction type!")
    assert reduction in reducers, (
        f"Unsupported reduction type! identity_loss reduction must be 'sum', 'mean' or 'none', "
        f"got {reduction!r}")
    out = reducers[reduction](x)
    tracing.mark_loss(out)
    return out


def nop(tensor: torch.Tensor) -> torch.Tensor:
    """An identity op that is never optimised away (for debugging)."""
    if not isinstance(tensor, torch.Tensor):
        raise Error(f"nop must take a torch.tensor argument. {type(tensor)} is not supported.")
    return tensor.clone()


def set_available_memory(tensor: torch.Tensor, available_memory_proportion: float) -> torch.Tensor:
    """Cap the temporary memory of the matmul or convolution that produced `tensor`.

    The simulator's cost model gives that op less working memory and, if it wanted more,
    more cycles.
    """
    if not isinstance(tensor, torch.Tensor):
        raise Error(f"You may only set available memory for torch.tensor values. "
                    f"{type(tensor)} is not supported.")
    check_fraction("set_available_memory()", available_memory_proportion)
    if tracing.STATE.capture is not None:
        tracing.STATE.capture.set_available_memory(tensor, available_memory_proportion)
    return tensor


def recomputationCheckpoint(*tensors: torch.Tensor):
    """Keep these activations (stash them) instead of recomputing them in the backward pass.

    Returns one tensor for one tensor, a tuple for several, and a list or tuple of the same
    type when given a single list or tuple.
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return type(tensors[0])(_checkpoint(tensors[0]))
    out = _checkpoint(tensors)
    return out[0] if len(out) == 1 else tuple(out)


def _checkpoint(tensors) -> list[torch.Tensor]:
    for t in tensors:
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"All inputs must be tensors: recomputationCheckpoint got a "
                             f"{type(t).__name__}")
        if tracing.STATE.capture is not None:
            tracing.STATE.capture.checkpoint(t)
    return list(tensors)


def serializedMatMul(lhs: torch.Tensor, rhs: torch.Tensor, mode: MatMulSerializationMode,
                     factor: int = 0, keep_precision: bool = False) -> torch.Tensor:
    """lhs @ rhs computed as `factor` smaller matmuls, trading time for temporary memory."""
    if not isinstance(mode, MatMulSerializationMode):
        raise TypeError(f"serializedMatMul mode must be a poptorch.MatMulSerializationMode, got {mode!r}")
    if mode == MatMulSerializationMode.Disabled:
        return lhs @ rhs
    check_int("serializedMatMul(factor)", factor)
    if mode == MatMulSerializationMode.InputChannels:
        return torch.cat([part @ rhs for part in lhs.tensor_split(factor, dim=-2)], dim=-2)
    if mode == MatMulSerializationMode.OutputChannels:
        return torch.cat([lhs @ part for part in rhs.tensor_split(factor, dim=-1)], dim=-1)
    pieces = zip(lhs.tensor_split(factor, dim=-1), rhs.tensor_split(factor, dim=-2))
    total = None
    for left, right in pieces:
        product = left @ right
        total = product if total is None else total + product
    return total


class MultiConv:
    """Convolutions run inside `with poptorch.MultiConv():` are planned together.

    With the Parallel plan (default) the simulator runs them side by side: the group takes as
    long as its slowest member. The other settings are recorded.
    """

    _next_group = 0

    def __init__(self):
        self._plan_type = MultiConvPlanType.Parallel
        self._settings: dict = {}
        self._saved = None

    def _record(self, name: str, value):
        self._settings[name] = value
        return self

    def availableMemoryProportions(self, value):
        """The share of each tile's memory the convolutions may use for temporaries (PopTorch:
        a float, or one per convolution, each in [0, 1)). Recorded; the cost model does not read
        it (docs/differences.md).

        Returns:
            This MultiConv, so that settings chain.
        """
        return self._record("availableMemoryProportions", value)

    def partialsTypes(self, value):
        """The type of each convolution's partial sums: torch.float or torch.half, or a list
        of them, one per convolution. Recorded (docs/differences.md).

        Returns:
            This MultiConv, so that settings chain.

        Raises:
            ValueError: another type, as in PopTorch.
        """
        values = value if isinstance(value, (list, tuple)) else [value]
        if not all(v in (torch.float32, torch.float16) for v in values):
            raise ValueError(f"Invalid partials types {value!r}: give torch.float or torch.half "
                             f"(or a list of them, one per convolution)")
        return self._record("partialsTypes", value)

    def enableConvDithering(self, value):
        """Dither each convolution's placement on the tiles (PopTorch: a bool, or one per
        convolution). Recorded (docs/differences.md).

        Returns:
            This MultiConv, so that settings chain.
        """
        return self._record("enableConvDithering", value)

    def cycleBackOff(self, value):
        """PopLibs' cycle back-off proportion, between 0 and 1, for the multi-convolution's
        planner. Recorded (docs/differences.md).

        Returns:
            This MultiConv, so that settings chain.
        """
        return self._record("cycleBackOff", value)

    def perConvReservedTiles(self, value):
        """Tiles PopLibs reserves for each convolution (an int). Recorded
        (docs/differences.md).

        Returns:
            This MultiConv, so that settings chain.
        """
        return self._record("perConvReservedTiles", value)

    def planType(self, value: MultiConvPlanType | None):
        """The multi-convolution plan; None restores the default (Parallel), as in PopTorch.

        Raises:
            AssertionError: anything else, a string included (PopTorch's exception type).
        """
        if value is not None and not isinstance(value, MultiConvPlanType):
            raise AssertionError(f"Invalid plan type {value!r}: MultiConv.planType expects a "
                                 f"poptorch.MultiConvPlanType (or None for the default)")
        self._plan_type = MultiConvPlanType.Parallel if value is None else value
        return self

    _open = 0  # MultiConv blocks being traced now: PopTorch refuses nesting them

    def __enter__(self) -> None:  # as PopTorch's: `with MultiConv() as m` gives None
        recorder = tracing.STATE.capture
        if recorder is not None:
            if MultiConv._open:
                raise Error("Nested poptorch.MultiConv is not supported: close one "
                            "`with poptorch.MultiConv():` block before opening the next")
            MultiConv._open += 1
            self._saved, self._first_op = recorder.multiconv, len(recorder.ops)
            MultiConv._next_group += 1
            parallel = self._plan_type == MultiConvPlanType.Parallel
            recorder.multiconv = MultiConv._next_group if parallel else None

    def __exit__(self, type, value, traceback) -> None:  # noqa: A002 (PopTorch's names)
        recorder = tracing.STATE.capture
        if recorder is None:
            return
        recorder.multiconv = self._saved
        MultiConv._open -= 1
        convs = [op for op in recorder.ops[self._first_op:] if op.name.startswith("aten.convolution")]
        if type is None and not convs:
            raise Error("Unexpected end_multi_conv: a poptorch.MultiConv block ran no "
                        "convolution; put the convolutions to plan together inside it")


# --- custom ops and loops -----------------------------------------------------------------------
_CUSTOM_OPS: dict[tuple[str, str], callable] = {}


def register_custom_op(name: str, domain: str, implementation) -> None:
    """Give a PopART custom op a Python implementation (the simulator's stand-in for loading
    the compiled op with ctypes). The implementation gets the inputs and the attributes as
    keyword arguments and returns a tensor or a list of tensors; autograd differentiates it."""
    check_str("register_custom_op(name)", name)
    check_str("register_custom_op(domain)", domain)
    if not callable(implementation):
        raise TypeError("register_custom_op needs a callable implementation")
    _CUSTOM_OPS[(domain, name)] = implementation


def custom_op(inputs, name: str, domain: str, domain_version: int, example_outputs,
              attributes: dict | None = None) -> list[torch.Tensor]:
    """Call a custom op registered with register_custom_op; returns a list of tensors."""
    key = (domain, name)
    if key not in _CUSTOM_OPS:
        known = ", ".join(f"{n!r} ({d})" for d, n in _CUSTOM_OPS) or "none"
        raise Error(f"custom op {name!r} in domain {domain!r} is not registered (registered: "
                    f"{known}). On an IPU you would load its library with ctypes; here give it a "
                    f"Python implementation: poptorch.register_custom_op({name!r}, {domain!r}, fn)")
    outputs = _CUSTOM_OPS[key](*inputs, **(attributes or {}))
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    if len(outputs) != len(example_outputs):
        raise Error(f"custom op {name!r} returned {len(outputs)} output(s) but example_outputs "
                    f"describes {len(example_outputs)}")
    for i, (out, example) in enumerate(zip(outputs, example_outputs)):
        if out.shape != example.shape or out.dtype != example.dtype:
            raise Error(f"custom op {name!r} output {i} is {tuple(out.shape)} {out.dtype}, but "
                        f"example_outputs[{i}] is {tuple(example.shape)} {example.dtype}")
    return outputs
