"""The module PopTorch wraps: a LightningModule's step function for one stage as `forward`."""
from __future__ import annotations

import contextlib
import warnings
import weakref

import torch
from lightning.pytorch.utilities.exceptions import MisconfigurationException
from torch.utils._pytree import tree_flatten

STEP_NAMES = ("training_step", "validation_step", "test_step", "predict_step")
LOGGING_METHODS = ("log", "log_dict")
BATCH_END_HOOKS = {"training_step": "on_train_batch_end", "validation_step": "on_validation_batch_end",
                   "test_step": "on_test_batch_end", "predict_step": "on_predict_batch_end"}


class RealIPUWarning(UserWarning):
    """Something the simulator runs but a real IPU (which traces each step) would refuse."""


def _is_planning_pass(args, kwargs) -> bool:
    """The simulator plans a model by running it once on meta tensors (shapes, no values)."""
    return any(isinstance(t, torch.Tensor) and t.is_meta
               for t in tree_flatten((args, kwargs))[0])


class LightningStep(torch.nn.Module):
    """`forward(*args)` calls `lightning_module.<step_name>(*args)`.

    PopTorch wraps this module, so the traced "model" is the step function, as in real
    Lightning. The LightningModule is a submodule (its parameters are this module's), and it is
    also held by a weak reference: a weakref survives `copy.deepcopy`, so the copy an
    inferenceModel keeps still calls the live module, which stays attached to its Trainer (its
    weights equal the host weights at every call, because training writes them back).
    """

    def __init__(self, lightning_module, step_name: str):
        super().__init__()
        if step_name not in STEP_NAMES:
            raise ValueError(f"unknown step {step_name!r}; expected one of {STEP_NAMES}")
        self.module = lightning_module
        self._live = weakref.ref(lightning_module)
        self.step_name = step_name
        self.logging_warned = [False]  # a list: shared with deep copies

    def forward(self, *args, **kwargs):
        module = self._live()
        step = getattr(module, self.step_name)
        if _is_planning_pass(args, kwargs):
            with _logging_disabled(module):
                output = step(*args, **kwargs)
        else:
            with _logging_noted(module, self.step_name, self.logging_warned):
                output = step(*args, **kwargs)
        if output is None and self.step_name == "training_step":
            raise MisconfigurationException(
                "Skipping backward by returning `None` from your `training_step` is not "
                "implemented for IPUs: the IPU's training call always updates the weights. Return "
                "the loss from every step (filter unwanted samples out of the batch instead).")
        return output


@contextlib.contextmanager
def _replaced_logging(module, replacement):
    """Shadow module.log and module.log_dict with `replacement(original)` for one call."""
    for name in LOGGING_METHODS:
        setattr(module, name, replacement(getattr(type(module), name).__get__(module)))
    try:
        yield
    finally:
        for name in LOGGING_METHODS:
            module.__dict__.pop(name, None)


def _logging_disabled(module):
    """The planning pass sees meta tensors: nothing it computes is a value worth logging."""
    return _replaced_logging(module, lambda original: lambda *args, **kwargs: None)


def _logging_noted(module, step_name: str, warned: list):
    """Log as usual, but tell the learner once that a real IPU would not allow it."""
    def replacement(original):
        def log(*args, **kwargs):
            if not warned[0]:
                warned[0] = True
                warnings.warn(
                    f"`self.log` in `{step_name}` works in the simulator (it runs the step in "
                    f"PyTorch, once per micro-batch) but not on real IPUs, where the step is "
                    f"traced into a graph. For hardware, return the value from the step and log "
                    f"it in `{BATCH_END_HOOKS[step_name]}` instead.",
                    RealIPUWarning, stacklevel=2)
            return original(*args, **kwargs)
        return log
    return _replaced_logging(module, replacement)
