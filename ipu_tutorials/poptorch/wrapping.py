"""trainingModel, inferenceModel and load: how a module becomes a PoplarExecutor."""
from __future__ import annotations

import torch

from ..errors import Error
from ._device_state import TRAINING_WRAPPERS
from ._saved_file import read_saved
from .executor import PoplarExecutor, _wrapped_module
from .options import Options


def trainingModel(model: torch.nn.Module, options: Options | None = None,
                  optimizer=None) -> PoplarExecutor:
    """Wrap `model` (which returns its loss) for training on the simulated IPU.

    Args:
        model: returns the loss, alone or as its last output.
        options: poptorch.Options (frozen by this call).
        optimizer: defaults to poptorch.optim.SGD(lr=0.01).

    Raises:
        RuntimeError: another live trainingModel already wraps `model`.
    """
    from .optim import SGD

    model = _wrapped_module(model)
    TRAINING_WRAPPERS.check_free(model)
    if optimizer is None:
        optimizer = SGD(model.parameters(), lr=0.01)
    executor = PoplarExecutor(model, options, training=True, optimizer=optimizer)
    TRAINING_WRAPPERS.claim(model, executor)
    return executor


def inferenceModel(model: torch.nn.Module, options: Options | None = None) -> PoplarExecutor:
    """Wrap `model` for inference on the simulated IPU; it keeps its own copy of the weights."""
    return PoplarExecutor(model, options, training=False)


def load(filename: str, edit_opts_fn=None) -> PoplarExecutor:
    """Rebuild and recompile a model saved with PoplarExecutor.save()."""
    saved = read_saved(filename)
    if saved["model"] is None:
        raise Error(f"{filename} was saved with export_model=False: rebuild the model, wrap it, "
                    f"and load its weights yourself")
    options = saved["options"].clone()
    if edit_opts_fn is not None:
        edit_opts_fn(options)
    if saved["training"]:
        executor = trainingModel(saved["model"], options, saved["optimizer"])
    else:
        executor = inferenceModel(saved["model"], options)
    args, kwargs = saved["example"]
    executor.compile(*args, **kwargs)
    if saved["rng_state"] is not None:
        torch.set_rng_state(saved["rng_state"])
    return executor
