"""opts.anchorTensor: the weights and gradients a training step keeps for getAnchoredTensor."""
from __future__ import annotations

import torch



class Anchors:
    """The anchored tensors' latest values, recorded as each weight update applies."""

    def __init__(self, model: torch.nn.Module, anchored: dict):
        """`anchored`: PopTorch's anchored_tensors, {short name: [PopART name, ...]}."""
        self.model = model
        self.anchored = {short: anchor[0] for short, anchor in anchored.items()}
        self.values: dict[str, torch.Tensor] = {}

    def record(self, grads: dict, scale: float) -> None:
        """Runtime hook: sees each update's accumulated gradients and their scale."""
        names = {p: n for n, p in self.model.named_parameters()}
        for short, long_name in self.anchored.items():
            kind, _, name = long_name.rpartition("___")
            for p, g in grads.items():
                if names.get(p) == name and kind == "Gradient":
                    self.values[short] = (g.float() * scale).clone()

    def record_updated_weights(self) -> None:
        """UpdatedVar___<name> anchors: each weight after this call's (last) update."""
        params = dict(self.model.named_parameters())
        for short, long_name in self.anchored.items():
            kind, _, name = long_name.rpartition("___")
            if kind == "UpdatedVar" and name in params:
                self.values[short] = params[name].detach().clone()

    def record_values(self, values: dict) -> None:
        """Anchors of tensors named as PopART names them (finalLossScale, ...)."""
        for short, long_name in self.anchored.items():
            if long_name in values:
                self.values[short] = values[long_name]

    def get(self, short_name: str) -> torch.Tensor:
        """The anchor's value; AssertionError, as PopTorch's, when there is none."""
        known = ", ".join(self.anchored) or "none (use opts.anchorTensor)"
        assert short_name in self.anchored, (
            f"No tensor with name {short_name} found. Anchored: {known}")
        assert short_name in self.values, (
            f"No tensor with name {short_name} found: it has no value yet; run a training "
            f"step first")
        return self.values[short_name]
