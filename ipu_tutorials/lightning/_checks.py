"""The known limitations of Lightning on IPUs, checked before anything runs."""
from __future__ import annotations

import torch
from lightning.pytorch.utilities.exceptions import MisconfigurationException
from lightning.pytorch.utilities.model_helpers import is_overridden

BATCH_TRANSFER_HOOKS = ("transfer_batch_to_device", "on_after_batch_transfer")
ONE_OPTIMIZER = ("IPUs currently only support one optimizer; configure_optimizers gave {count}. "
                 "Return a single optimizer (with several parameter groups if they need different "
                 "settings); manual optimization is not an option on IPUs either.")


def check_trainer(trainer, module) -> None:
    """Refuse what the IPU strategy cannot run, with what to do instead.

    Raises:
        MisconfigurationException: an overridden batch-transfer hook, or gradient clipping.
    """
    _check_batch_hooks(module, trainer.datamodule)
    if trainer.gradient_clip_val:
        raise MisconfigurationException(
            f"IPUs currently do not support clipping gradients "
            f"(Trainer(gradient_clip_val={trainer.gradient_clip_val})): the update happens on "
            f"the device, inside the training call. Remove gradient_clip_val; lower the "
            f"learning rate or use loss scaling instead.")


def check_manual_optimization(module) -> None:
    """Refuse manual optimization (checked after the one-optimizer rule, as Lightning 2.0.9 did).

    Raises:
        MisconfigurationException: `automatic_optimization` is False.
    """
    if not module.automatic_optimization:
        raise MisconfigurationException(
            "IPUs do not support manual optimization (automatic_optimization=False): one IPU "
            "call runs forward, backward and the weight update, so there is no backward or "
            "optimizer.step for the step to call. Return the loss from training_step and let "
            "Lightning optimize.")


def _check_batch_hooks(module, datamodule) -> None:
    for owner in (module, datamodule):
        if owner is None:
            continue
        for hook in BATCH_TRANSFER_HOOKS:
            if is_overridden(hook, owner):
                raise MisconfigurationException(
                    f"Overriding `{hook}` is not supported with IPUs "
                    f"({type(owner).__name__}.{hook}): the host streams each batch to the IPU "
                    f"itself. Move that work into the dataset, the collate_fn or the step.")


def check_optimizers(optimizers: list) -> None:
    """One optimizer, and not LBFGS.

    Raises:
        MisconfigurationException: none, several, or an LBFGS optimizer.
    """
    if len(optimizers) != 1:
        raise MisconfigurationException(ONE_OPTIMIZER.format(count=len(optimizers)))
    if isinstance(optimizers[0], torch.optim.LBFGS):
        raise MisconfigurationException(
            "IPUs and the LBFGS optimizer are not compatible: LBFGS re-evaluates the model "
            "several times per step, but an IPU training call runs forward, backward and the "
            "update once. Use SGD, Adam, AdamW, RMSprop or LAMB.")
