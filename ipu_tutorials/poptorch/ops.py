"""PopTorch's model-level ops and utilities, with their CPU and simulated-IPU behaviour."""
from __future__ import annotations

import contextlib
import logging

import numpy as np
import torch

from .. import environment
from ..errors import Error
from ._to_simulator import tracing
from ._checks import check_fraction, check_int, check_str
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
def _format(t: torch.Tensor, options: dict) -> str:
    digits, style = options["digits"], options["float_format"]
    styles = {"auto": {"floatmode": "maxprec"}, "fixed": {"floatmode": "fixed"},
              "none": {"floatmode": "unique"},
              "scientific": {"formatter": {"float_kind": lambda x: f"{x:.{digits}e}"}}}
    text = np.array2string(t.detach().float().cpu().numpy(), separator=options["separator"],
                           threshold=options["summarise_threshold"],
                           edgeitems=options["edge_items"], max_line_width=options["max_line_width"],
                           precision=digits, **styles[style])
    return text.replace("[", options["open_bracket"]).replace("]", options["close_bracket"])


class _PrintTensor(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, title, print_gradient, options):
        ctx.title, ctx.print_gradient, ctx.options = title, print_gradient, options
        print(f"{title}: {_format(tensor, options)}" if title else _format(tensor, options))
        return tensor.clone()

    @staticmethod
    def backward(ctx, grad):
        if ctx.print_gradient:
            print(f"{ctx.title}_gradient: {_format(grad, ctx.options)}")
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
    if reduction not in reducers:
        raise ValueError(f"identity_loss reduction must be 'sum', 'mean' or 'none', got {reduction!r}")
    out = reducers[reduction](x)
    if tracing.STATE.capture is not None:
        tracing.STATE.capture.mark_loss(out)
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
        self.plan_type = MultiConvPlanType.Parallel
        self.settings: dict = {}
        self._saved = None

    def _record(self, name: str, value):
        self.settings[name] = value
        return self

    def availableMemoryProportions(self, value):
        return self._record("availableMemoryProportions", value)

    def partialsTypes(self, value):
        return self._record("partialsTypes", value)

    def enableConvDithering(self, value):
        return self._record("enableConvDithering", value)

    def cycleBackOff(self, value):
        return self._record("cycleBackOff", value)

    def perConvReservedTiles(self, value):
        return self._record("perConvReservedTiles", value)

    def planType(self, value: MultiConvPlanType):
        if not isinstance(value, MultiConvPlanType):
            raise TypeError(f"MultiConv.planType expects a poptorch.MultiConvPlanType, got {value!r}")
        self.plan_type = value
        return self

    def __enter__(self):
        recorder = tracing.STATE.capture
        if recorder is not None:
            self._saved = recorder.multiconv
            MultiConv._next_group += 1
            parallel = self.plan_type == MultiConvPlanType.Parallel
            recorder.multiconv = MultiConv._next_group if parallel else None
        return self

    def __exit__(self, *exc):
        if tracing.STATE.capture is not None:
            tracing.STATE.capture.multiconv = self._saved
        return False


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


_IN_TRAINING_MODEL = [False]  # set while a trainingModel compiles or runs its forward pass


@contextlib.contextmanager
def training_graph(training: bool):
    """Mark the forward passes of a trainingModel (for_loop is inference-only in PopTorch)."""
    saved, _IN_TRAINING_MODEL[0] = _IN_TRAINING_MODEL[0], training
    try:
        yield
    finally:
        _IN_TRAINING_MODEL[0] = saved


def _check_loop_inputs(inputs) -> None:
    if not isinstance(inputs, list):
        raise ValueError(f"poptorch.for_loop expects input tensors (inputs) to be a list of "
                         f"tensors. (Object is not list: got {type(inputs).__name__}; wrap it "
                         f"as [tensor])")
    for index, tensor in enumerate(inputs):
        if not isinstance(tensor, torch.Tensor):
            raise ValueError(f"poptorch.for_loop expects input tensors (inputs) to be a list of "
                             f"tensors. (Object contained in list at index {index} is not "
                             f"torch.tensor: got {type(tensor).__name__})")


def for_loop(count: int, body, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
    """Run `inputs = body(*inputs)` `count` times (a loop compiled once on the IPU).

    The inputs are passed by value: in-place ops in the body do not change the caller's tensors.

    Raises:
        ValueError: inputs is not a list of tensors.
        Error: inside a trainingModel (PopTorch supports for_loop in inference only).
    """
    check_int("for_loop(count)", count)
    if not callable(body):
        raise TypeError("for_loop body must be callable")
    _check_loop_inputs(inputs)
    if _IN_TRAINING_MODEL[0] and tracing.STATE.on_ipu:
        raise Error("poptorch.for_loop() is only supported in inference: use it in a model "
                    "wrapped with poptorch.inferenceModel, or write a Python loop for training")
    inputs = [t.clone() for t in inputs]
    for _ in range(count):
        result = body(*inputs)
        result = list(result) if isinstance(result, (list, tuple)) else [result]
        if len(result) != len(inputs):
            raise Error(f"for_loop body must return as many tensors as it takes ({len(inputs)}), "
                        f"got {len(result)}")
        inputs = result
    return inputs


def cond(condition: torch.Tensor, then_body, then_inps: list, else_body, else_inps: list) -> list:
    """On-device if/else (inference only): run `then_body(*then_inps)` when `condition` is
    true, else `else_body(*else_inps)`; both branches return the same number of tensors.

    The inputs are passed by value. While the simulator captures the graph (shapes only) both
    branches are recorded, as the IPU compiles both.

    Raises:
        ValueError: the inputs are not lists.
        Error: inside a trainingModel.
    """
    if not isinstance(then_inps, list) or not isinstance(else_inps, list):
        raise ValueError("poptorch.cond expects then_inps and else_inps tensors to be a list of "
                         "tensors. (Object is not list)")
    if _IN_TRAINING_MODEL[0] and tracing.STATE.on_ipu:
        raise Error("poptorch.cond() is only supported in inference: use it in a model wrapped "
                    "with poptorch.inferenceModel")

    def run(body, inputs):
        out = body(*[t.clone() if isinstance(t, torch.Tensor) else t for t in inputs])
        return [out] if isinstance(out, torch.Tensor) else list(out)

    if isinstance(condition, torch.Tensor) and condition.is_meta:  # capture: both branches
        then_out, else_out = run(then_body, then_inps), run(else_body, else_inps)
        if len(then_out) != len(else_out):
            raise Error(f"poptorch.cond: then_body returns {len(then_out)} tensors but else_body "
                        f"returns {len(else_out)}; both branches must return the same number")
        return then_out
    return run(then_body, then_inps) if bool(condition) else run(else_body, else_inps)


def _check_dynamic(op: str, tensor, dim, start, size) -> None:
    if not isinstance(tensor, torch.Tensor):
        raise Error(f"{op} must take a torch.tensor input. {type(tensor)} is not supported.")
    if not isinstance(dim, int):
        raise Error("Dimension must be an integer.")
    if not isinstance(start, torch.Tensor):
        raise Error(f"Slice start argument to {op} must be a torch.tensor. {type(start)} is not "
                    f"supported.")
    if not isinstance(size, int):
        raise Error("Size must be an integer.")


def dynamic_slice(tensor: torch.Tensor, dim: int, start: torch.Tensor, size: int,
                  step: int) -> torch.Tensor:
    """tensor[start:start + size:step] along `dim`, where `start` is a tensor known only at run
    time and `size` and `step` are constants."""
    _check_dynamic("dynamic_slice", tensor, dim, start, size)
    if not isinstance(step, int):
        raise Error("Step must be an integer.")
    index = start.reshape(()).long() + torch.arange(0, size, step, device=tensor.device)
    return tensor.index_select(dim, index)


def dynamic_update(input: torch.Tensor, src: torch.Tensor, dim: int, start: torch.Tensor,
                   size: int) -> torch.Tensor:
    """A copy of `input` with `src` written at [start:start + size] along `dim` (`start` a
    tensor known only at run time)."""
    _check_dynamic("dynamic_update", input, dim, start, size)
    if not isinstance(src, torch.Tensor):
        raise Error(f"Src argument to dynamic_update must be a torch.tensor. {type(src)} is not "
                    f"supported.")
    if input.dim() != src.dim():
        raise Error(f"input and src tensors must have same dimensionality. ({input.dim()}) vs "
                    f"({src.dim()})")
    if input.dtype != src.dtype:
        raise Error(f"input and src tensor must have same dtype. ({input.dtype} vs {src.dtype})")
    index = start.reshape(()).long() + torch.arange(size, device=input.device)
    return input.index_copy(dim, index, src)
