"""opts.Training.setAutomaticLossScaling: PopART's automatic loss scaling, step by step.

PopART as SDK 3.4 ships it (graphcore/popart@sdk/poplar/3.4.0: willow/src/transforms/
automaticlossscaling.cpp, willow/src/popx/op/lossscaleupdatex.cpp,
willow/include/popart/sessionoptions.hpp) keeps a `lossScaleUpdateFactor` (an optimizer state
tensor, starting at 1). Each step's loss scale is `finalLossScale` = loss_scaling x factor, taken
before the factor changes. After the step, the float16 gradients are counted in two bins, below
and above binEdgeLocation (1/8, the default since SDK 2.5; 1/16 before) of float16's largest
value, 65504 (getLevels); float32 gradients are not counted. When the upper count exceeds
thresholdUpperCountProportion (1e-7) of the total, the factor halves, otherwise it doubles. With
float16 weights the final loss scale is clipped to 32768, the largest power of two that fits in
float16.

The simulator counts the float16 weights' accumulated gradients (PopART counts the float16
gradients of chosen ops, micro-batch by micro-batch, and refuses to compile a model that has
none); docs/differences.md lists it.
"""
from __future__ import annotations

import torch

from ..errors import Error

# PopART's words when it finds nothing to track (transforms/automaticlossscaling.cpp)
NO_FLOAT16 = "[AutomaticLossScale transform] No tracked gradient tensors of type fp16 were found."

BIN_EDGE_LOCATION = 0.125  # binEdgeLocation (SDK 2.5 and later; 0.0625 in SDK 2.4)
THRESHOLD = 1e-7  # thresholdUpperCountProportion
FLOAT16_CLIP = 32768.0
FLOAT16_MAX = 65504.0  # getLevels' float16 range (SDK 2.4 used uint16's 65535)


def bin_edge() -> float:
    """The histogram's one bin edge, for float16 gradients (PopART's getLevels)."""
    return FLOAT16_MAX * BIN_EDGE_LOCATION


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
        # a weight's gradient has the weight's type in the backward pass, whatever the accumulator;
        # PopART tracks float16 gradients only
        tracked = [g for p, g in grads.items() if p.dtype == torch.float16]
        upper = sum(int((g.double().abs() > bin_edge()).sum()) for g in tracked)
        lower = sum(g.numel() for g in tracked) - upper
        self.factor *= 0.5 if upper > THRESHOLD / (1 - THRESHOLD) * lower else 2.0
        if self.float16 and loss_scaling * self.factor > FLOAT16_CLIP:
            self.factor = FLOAT16_CLIP / loss_scaling
        return self.step_scale(loss_scaling)

    @classmethod
    def for_model(cls, options, optimizer) -> "AutomaticLossScaling | None":
        """The model's automatic loss scaling, when enabled (poptorch.optim optimizers only:
        a torch.optim optimizer has no loss scaling to adjust)."""
        if not options.Training._value("auto_loss_scaling") or not hasattr(optimizer, "loss_scaling"):
            return None
        weights = [p for g in optimizer.param_groups for p in g["params"]]
        if not any(p.dtype == torch.float16 for p in weights):
            raise Error(f"{NO_FLOAT16} Automatic loss scaling counts float16 gradients only, and a "
                        f"model with no float16 weights has none: make the weights float16 "
                        f"(model.half()), or turn it off and give the optimizer a loss_scaling.")
        return cls(float16=True)

    def anchors(self) -> dict[str, torch.Tensor]:
        """The tensors opts.anchorTensor can name: PopART's finalLossScale and the factor."""
        values = {"lossScaleUpdateFactor": torch.tensor(self.factor)}
        if self.final_loss_scale is not None:
            values["finalLossScale"] = torch.tensor(self.final_loss_scale)
        return values


def step_scaling(scaler: AutomaticLossScaling | None, loss_scaling: float, anchors):
    """One training call's (on_update, loss_scale) for the runtime: with automatic loss
    scaling, each step's loss scale is the final loss scale from the spec's loss_scaling, and
    the hook the runtime calls at each update moves the factor and records the anchors;
    (None, None) when it is off (the runtime then reads the spec's loss scale)."""
    if scaler is None:
        return None, None

    def on_update(grads: dict, scale: float) -> None:
        scaler.observe(grads, loss_scaling)
        anchors.record_values(scaler.anchors())

    return on_update, lambda: scaler.step_scale(loss_scaling)
