"""IPUPrecisionPlugin: 32-bit, mixed 16-bit and pure 16-bit training on the simulated IPU."""
from __future__ import annotations

from typing import Any, Callable

import torch
from lightning.pytorch.plugins.precision import Precision
from lightning.pytorch.utilities import GradClipAlgorithmType
from lightning.pytorch.utilities.exceptions import MisconfigurationException

SUPPORTED = ("32-true", "16-mixed", "16-true")
# What Lightning's Trainer(precision=...) values mean here.
ALIASES = {"32": "32-true", 32: "32-true", "16": "16-mixed", 16: "16-mixed"}


def check_precision(precision: Any) -> str:
    """The canonical precision name, or a ValueError that lists the supported ones."""
    name = ALIASES.get(precision, precision)
    if name not in SUPPORTED:
        raise ValueError(f"`Trainer(accelerator='ipu', precision={precision!r})` is not supported. "
                         f"`precision` must be one of: {SUPPORTED} (16 and '16' mean '16-mixed'; "
                         f"IPUs have no bfloat16 or float64)")
    return name


class IPUPrecisionPlugin(Precision):
    """Precision on the simulated IPU.

    "32-true": float32 weights and inputs. "16-mixed": float32 weights, inputs cast to float16
    on the host; call `model.half()` as well for pure 16-bit training (weights in float16 too).
    "16-true": the module is converted with `.half()` for you. There is no automatic (dynamic)
    loss scaling, as on real IPUs with Lightning; set `loss_scaling` on a poptorch optimizer.

    The IPU runs forward, backward and the weight update in one call, so `backward` does nothing
    and `optimizer_step` only runs the closure (which calls the IPU).

    Args:
        precision: "32-true", "16-mixed" or "16-true" (16 means "16-mixed").

    Raises:
        ValueError: another precision (bf16, 64, transformer-engine).
    """

    def __init__(self, precision: Any):
        self.precision = check_precision(precision)

    @property
    def _casts_inputs(self) -> bool:
        """Whether floating-point batches are cast to float16 on the host."""
        return self.precision in ("16-mixed", "16-true")

    def convert_module(self, module: torch.nn.Module) -> torch.nn.Module:
        """The module in float16 (`.half()`) for "16-true"; unchanged otherwise (Lightning
        2.0.9's plugin had no "16-true" and changed no module: docs/lightning.md)."""
        return module.half() if self.precision == "16-true" else module

    def backward(self, tensor: torch.Tensor, model, *args: Any, **kwargs: Any) -> None:
        """Nothing: the IPU already ran the backward pass inside the training call."""

    def optimizer_step(self, optimizer, model, closure: Callable[[], Any], **kwargs: Any) -> Any:
        """Run the closure (the IPU call that trains); refuse what an IPU cannot do.

        Raises:
            MisconfigurationException: an LBFGS optimizer, or a `training_step` returning None.
        """
        if isinstance(optimizer, torch.optim.LBFGS):
            raise MisconfigurationException(
                "IPUs and the LBFGS optimizer are not compatible: LBFGS re-evaluates the model "
                "several times per step, but an IPU training call runs forward, backward and the "
                "update once. Use SGD, Adam, AdamW, RMSprop or LAMB.")
        result = closure()
        if result is None:
            raise MisconfigurationException(
                "Skipping backward by returning `None` from your `training_step` is not "
                "implemented for IPUs: the IPU's training call always updates the weights. Return "
                "the loss from every step (filter unwanted samples out of the batch instead).")
        self._after_closure(model, optimizer)
        return result

    def clip_gradients(self, optimizer, clip_val: float = 0.0,
                       gradient_clip_algorithm=GradClipAlgorithmType.NORM) -> None:
        """Refuse clipping: the IPU applies the update inside the training call.

        Raises:
            MisconfigurationException: `clip_val` > 0.
        """
        if clip_val and clip_val > 0:
            raise MisconfigurationException(
                f"IPUs currently do not support clipping gradients (clip_val={clip_val}): the "
                f"update happens on the device, inside the training call. Remove "
                f"`gradient_clip_val` from the Trainer and any `clip_gradients` call; lower the "
                f"learning rate or use loss scaling instead.")

