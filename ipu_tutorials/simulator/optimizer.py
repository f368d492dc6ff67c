"""What the runtime and the planner ask of an optimizer: the DeviceOptimizer protocol."""
from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch


@runtime_checkable
class DeviceOptimizer(Protocol):
    """An optimizer that applies accumulated gradients itself, as PopTorch's optimizers do.

    poptorch.optim's optimizers implement it. A plain torch.optim optimizer does not: the
    runtime then writes the scaled gradients into `.grad` and calls `step()`, and the planner
    sizes its state like its PopTorch twin.
    """

    # Its members other than PopTorch's own (param_groups) start with "_": they are the
    # simulator's questions, not part of PopTorch's optimizer classes. The loss scale is not
    # asked of the optimizer: it comes in the spec (OptimizerSpec.loss_scaling).
    param_groups: list[dict]
    _accumulator_type: torch.dtype | None  # gradient accumulator dtype (None: the weights' dtype)
    _state_per_param: int  # tensors of optimizer state kept per weight
    _state_bytes: int  # width of one element of that state
    _flops_per_param: int  # arithmetic of one update, per weight element

    def _apply_gradients(self, grads: dict[torch.Tensor, torch.Tensor], scale: float) -> None:
        """Update each parameter from its accumulated gradient times `scale`.

        scale = 1 / (loss_scaling x micro-batches averaged).
        """
