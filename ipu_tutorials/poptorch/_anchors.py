"""opts.anchorTensor: the weights and gradients a training step keeps for getAnchoredTensor."""
from __future__ import annotations

import torch

from ..errors import Error


class Anchors:
    """The anchored tensors' latest values, recorded as each weight update applies."""

    def __init__(self, model: torch.nn.Module, anchored: dict):
        self.model, self.anchored = model, anchored
        self.values: dict[str, torch.Tensor] = {}

    def record(self, grads: dict, scale: float) -> None:
        """Runtime hook: sees each update's accumulated gradients and their scale."""
        names = {p: n for n, p in self.model.named_parameters()}
        for short, anchor in self.anchored.items():
            kind, _, name = anchor["long_name"].rpartition("___")
            for p, g in grads.items():
                if names.get(p) == name and kind == "Gradient":
                    self.values[short] = (g.float() * scale).clone()

    def record_updated_weights(self) -> None:
        """UpdatedVar___<name> anchors: each weight after this call's (last) update."""
        params = dict(self.model.named_parameters())
        for short, anchor in self.anchored.items():
            kind, _, name = anchor["long_name"].rpartition("___")
            if kind == "UpdatedVar" and name in params:
                self.values[short] = params[name].detach().clone()

    def record_values(self, values: dict) -> None:
        """Anchors of tensors named as PopART names them (finalLossScale, ...)."""
        for short, anchor in self.anchored.items():
            if anchor["long_name"] in values:
                self.values[short] = values[anchor["long_name"]]

    def get(self, short_name: str) -> torch.Tensor:
        if short_name not in self.anchored:
            known = ", ".join(self.anchored) or "none (use opts.anchorTensor)"
            raise Error(f"no anchored tensor named {short_name!r}; anchored: {known}")
        if short_name not in self.values:
            raise Error(f"{short_name!r} has no value yet: run a training step first")
        return self.values[short_name]
