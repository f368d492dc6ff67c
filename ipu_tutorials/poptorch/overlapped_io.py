"""Overlapped host I/O: set_overlap_for_input / set_overlap_for_output and PopTorch's rules.

The marks are checked while the model compiles (its one captured forward pass); the simulated
timings ignore them (docs/differences.md): the values pass through unchanged.
"""
from __future__ import annotations

import contextlib

import torch
from torch.utils._pytree import tree_flatten, tree_map

from ..errors import Error
from ._option_rules import resolved_output_mode
from .enums import OutputMode, OverlapMode
from .strategies import PipelinedExecution

NOT_INPUT = ("poptorch.set_overlap_for_input applied on a node which is not a tensor input to "
             "the model.")
NOT_OUTPUT = ("poptorch.set_overlap_for_output applied on a node which is not a tensor output "
              "to the model.")
RETURNED_TWICE = ("poptorch.set_overlap_for_output cannot be used with a tensor that is returned "
                  "twice. Please check all returned tensors including those nested in "
                  "tuples/lists.")


class _Watch:
    """The marks of the forward pass being compiled: the model's input tensors, marked outputs."""

    def __init__(self):
        self.inputs: set[int] | None = None  # ids, known once the model's forward starts
        self.outputs: dict[int, torch.Tensor] = {}
        self.overlapped = False  # a mark other than NoOverlap

    def before_forward(self, args, kwargs):
        self.inputs = {id(t) for t in tree_flatten((args, kwargs))[0]
                       if isinstance(t, torch.Tensor)}
        self.outputs = {}

    def after_forward(self, output):
        returned = [id(t) for t in tree_flatten(output)[0] if isinstance(t, torch.Tensor)]
        for marked in self.outputs:
            if returned.count(marked) == 0:
                raise Error(NOT_OUTPUT)
            if returned.count(marked) > 1:
                raise Error(RETURNED_TWICE)


class _Watching:
    """Owns the one piece of global state: the watch of the compile under way, if any."""

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.current: _Watch | None = None


WATCHING = _Watching()


@contextlib.contextmanager
def watching(model: torch.nn.Module):
    """Check the overlap marks of the forward passes run inside (the compile's capture)."""
    watch = _Watch()
    # plain functions, not bound methods: a deep copy of the model (a capture may make one)
    # must keep reporting to this watch, not to a copy of it
    pre = model.register_forward_pre_hook(
        lambda module, args, kwargs: watch.before_forward(args, kwargs), with_kwargs=True)
    post = model.register_forward_hook(lambda module, args, output: watch.after_forward(output))
    saved, WATCHING.current = WATCHING.current, watch
    try:
        yield watch
    finally:
        WATCHING.current = saved
        pre.remove()
        post.remove()


def check_settings(watch: _Watch, opts, training: bool) -> None:
    """The options overlapped I/O needs (PopTorch checks them when it adds the outputs)."""
    if not watch.overlapped:
        return
    if type(opts._value("execution_strategy")) is PipelinedExecution:  # not its Sharded subclass
        raise Error("Overlapped IO is not supported with poptorch.PipelinedExecution. If you are "
                    "using only one IPU, please switch to poptorch.ShardedExecution.")
    if not opts.TensorLocations._value("num_io_tiles"):  # unset until numIOTiles()
        raise Error("No IO tiles allocated. You must allocate at least 32 IO tiles using "
                    "poptorch.Options().TensorLocations.numIOTiles.")
    mode = resolved_output_mode(opts._value("output_mode"), training)
    if mode not in (OutputMode.Sum, OutputMode.All):
        raise Error("Unsupported output mode for overlapped IO. Please switch output mode to "
                    "poptorch.OutputMode.All or poptorch.OutputMode.Sum.")


def _marker(kind: str, mode: OverlapMode, record):
    if not isinstance(mode, OverlapMode):
        raise TypeError(f"set_overlap_for_{kind}() expects a poptorch.OverlapMode, got {mode!r}")

    def mark(tensor):
        if not isinstance(tensor, torch.Tensor):
            raise Error(f"You may only set overlap for torch.tensor {kind}s. {type(tensor)} is "
                        f"not supported.")
        watch = WATCHING.current
        if watch is not None and watch.inputs is not None:
            watch.overlapped |= mode is not OverlapMode.NoOverlap
            record(watch, tensor)
        return tensor
    return mark


def _record_input(watch: _Watch, tensor: torch.Tensor) -> None:
    if id(tensor) not in watch.inputs:
        raise Error(NOT_INPUT)


def _record_output(watch: _Watch, tensor: torch.Tensor) -> None:
    watch.outputs[id(tensor)] = tensor  # held so that its id stays unique


def set_overlap_for_input(input_tensors, mode: OverlapMode):
    """Mark model inputs (a tensor, or tuples/lists/dicts of them) for overlapped host I/O.

    Call it first thing in forward, on the inputs themselves; returns them unchanged.
    """
    return tree_map(_marker("input", mode, _record_input), input_tensors)


def set_overlap_for_output(output_tensors, mode: OverlapMode):
    """Mark model outputs for overlapped host I/O, just before returning them (each returned
    once); returns them unchanged."""
    return tree_map(_marker("output", mode, _record_output), output_tensors)
