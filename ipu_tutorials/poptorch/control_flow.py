"""PopTorch's control-flow and dynamic-indexing ops: for_loop, cond, dynamic_slice, dynamic_update.

On the CPU they run as plain Python loops, branches and indexing, with PopTorch's checks;
for_loop and cond are inference-only inside a trainingModel, as in PopTorch.
"""
from __future__ import annotations

import contextlib

import torch

from ..errors import Error
from ._checks import check_int
from ._host_types import ipu_dtype
from ._to_simulator import tracing

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
    return run(then_body, then_inps) if _device_condition(condition) else run(else_body, else_inps)


def _device_condition(condition) -> bool:
    """The condition's value for this run. The IPU tests it on the device at every run, so the
    read is not one of forward's Python reads that tracing freezes (simulator/frozen_values.py):
    torch-function modes, the frozen-value recorder among them, do not see it."""
    with torch._C.DisableTorchFunction():
        return bool(condition)


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
    if size == 0:
        raise Error("The start and end of a slice must be different.")
    if size < 0:
        raise Error("Taking a slice of a tensor with the end less than the start is not supported.")


def dynamic_slice(tensor: torch.Tensor, dim: int, start: torch.Tensor, size: int,
                  step: int) -> torch.Tensor:
    """tensor[start:start + size:step] along `dim`, where `start` is a tensor known only at run
    time and `size` and `step` are constants."""
    _check_dynamic("dynamic_slice", tensor, dim, start, size)
    if not isinstance(step, int):
        raise Error("Step must be an integer.")
    if step < 1:
        raise Error("Slicing step must be at least 1")
    if tensor.shape[dim] % size:  # a rule of PopTorch's lowering (SliceOps.cpp)
        raise Error(f"The size of the slice ({size}) must be a factor of the slicing dimension "
                    f"({tensor.shape[dim]}).")
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
    if ipu_dtype(input.dtype) != ipu_dtype(src.dtype):  # the types as the IPU holds them
        raise Error(f"input and src tensor must have same dtype. ({ipu_dtype(input.dtype)} vs "
                    f"{ipu_dtype(src.dtype)})")
    src = src.to(input.dtype)  # int32 and int64 are one type on the IPU
    index = start.reshape(()).long() + torch.arange(size, device=input.device)
    return input.index_copy(dim, index, src)
