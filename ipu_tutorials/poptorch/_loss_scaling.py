"""opts.Training.setAutomaticLossScaling: PopART's automatic loss scaling, step by step.

PopART (graphcore/popart: transforms/automaticlossscaling.hpp, popx/op/lossscaleupdatex.cpp,
sessionoptions.hpp) keeps a `lossScaleUpdateFactor` (an optimizer state tensor, starting at 1).
Each step's loss scale is `finalLossScale` = loss_scaling x factor, taken before the factor
changes. After the step, the gradients are counted in two bins, below and above
binEdgeLocation (1/16) of their type's range (transforms/automaticlossscaling.cpp, getLevels:
65535 for float16, the largest uint16 rather than the largest float16, and FLT_MAX for float32);
when the upper count exceeds thresholdUpperCountProportion (1e-7) of the total, the factor
halves, otherwise it doubles. With float16 weights the final loss scale is clipped to 32768, the
largest power of two that fits in float16.

The simulator counts the weights' accumulated gradients (PopART counts the gradients of chosen
ops, micro-batch by micro-batch); docs/differences.md lists it.
"""
from __future__ import annotations

import contextlib

import torch

BIN_EDGE_LOCATION = 0.0625  # binEdgeLocation
THRESHOLD = 1e-7  # thresholdUpperCountProportion
FLOAT16_CLIP = 32768.0


def bin_edge(dtype: torch.dtype) -> float:
    """The histogram's one bin edge for gradients of this type (PopART's getLevels)."""
    top = 65535.0 if dtype == torch.float16 else torch.finfo(dtype).max
    return top * BIN_EDGE_LOCATION


class AutomaticLossScaling:
    """The update factor of one training model, and the loss scale of its last step."""

    def __init__(self, float16: bool):
        self.float16 = float16  # float16 weights: the loss scale is clipped
        self.factor = 1.0
        self.final_loss_scale: float | None = None

    def step_scale(self, loss_scaling: float) -> float:
        """The loss scale the next step uses (finalLossScale)."""
        scale = loss_scaling * self.factor
        return min(scale, FLOAT16_CLIP) if self.float16 else scale

    def observe(self, grads: dict, loss_scaling: float) -> float:
        """Count one step's gradients ({weight: loss-scaled gradient}) and change the factor;
        returns the next step's loss scale."""
        self.final_loss_scale = self.step_scale(loss_scaling)
        # a weight's gradient has the weight's type in the backward pass, whatever the accumulator
        upper = sum(int((g.double().abs() > bin_edge(p.dtype)).sum()) for p, g in grads.items())
        lower = sum(g.numel() for g in grads.values()) - upper
        self.factor *= 0.5 if upper > THRESHOLD / (1 - THRESHOLD) * lower else 2.0
        if self.float16 and loss_scaling * self.factor > FLOAT16_CLIP:
            self.factor = FLOAT16_CLIP / loss_scaling
        return self.step_scale(loss_scaling)

    @classmethod
    def for_model(cls, options, optimizer) -> "AutomaticLossScaling | None":
        """The model's automatic loss scaling, when enabled (poptorch.optim optimizers only:
        a torch.optim optimizer has no loss scaling to adjust)."""
        if not options.Training.auto_loss_scaling or not hasattr(optimizer, "loss_scaling"):
            return None
        weights = [p for g in optimizer.param_groups for p in g["params"]]
        return cls(any(p.dtype == torch.float16 for p in weights))

    def anchors(self) -> dict[str, torch.Tensor]:
        """The tensors opts.anchorTensor can name: PopART's finalLossScale and the factor."""
        values = {"lossScaleUpdateFactor": torch.tensor(self.factor)}
        if self.final_loss_scale is not None:
            values["finalLossScale"] = torch.tensor(self.final_loss_scale)
        return values


@contextlib.contextmanager
def scaling(scaler: AutomaticLossScaling | None, optimizer, hook, anchors):
    """One training call: with automatic loss scaling, the optimizer's loss_scaling is each
    step's final loss scale, and the hook the runtime calls at each update also moves the
    factor and records the anchors; yields that hook (the given one when scaling is off)."""
    if scaler is None or not hasattr(optimizer, "loss_scaling"):  # torch.optim: no scale
        yield hook
        return
    base = optimizer.loss_scaling

    def on_update(grads: dict, scale: float) -> None:
        if hook is not None:
            hook(grads, scale)
        optimizer.loss_scaling = scaler.observe(grads, base)
        anchors.record_values(scaler.anchors())

    optimizer.loss_scaling = scaler.step_scale(base)
    try:
        yield on_update
    finally:
        optimizer.loss_scaling = base
