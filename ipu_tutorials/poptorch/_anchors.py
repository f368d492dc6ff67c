"""opts.anchorTensor: the weights and gradients a training step keeps for getAnchoredTensor."""
from __future__ import annotations

import contextlib

import torch

from .enums import OutputMode


class Anchors:
    """The anchored tensors' values after each call, as PopART's anchors return them.

    `Gradient___<w>` is one micro-batch's gradient of the loss (times the loss scale) with
    respect to w, which the update adds into its accumulator (PopART's `Accum___<w>`), so the
    anchor's output mode picks micro-batches: Final the last one, All every one, EveryN every
    N-th, Sum their sum; with several, PopTorch lays them one after another along the first
    dimension (PoplarExecutable.cpp: `dims[0] *= b_dim`), per replica for Final and Sum.
    `UpdatedVar___<w>` is the weight after the call's last update.
    """

    def __init__(self, model: torch.nn.Module, anchored: dict,
                 output_mode: OutputMode = OutputMode.Default):
        """`anchored`: PopTorch's anchored_tensors, {short name: [PopART name, mode given
        or not, mode, return period]}; `output_mode`: the model's."""
        self.model = model
        self.anchored = {short: {"long_name": long_name, "output_return_period": period,
                                 "output_mode": OutputMode.Default if mode is None else mode}
                         for short, (long_name, _, mode, period) in anchored.items()}
        self.output_mode = output_mode  # the model's: an anchor given no mode takes it
        self.values: dict[str, torch.Tensor] = {}

    def _gradient_anchors(self) -> dict[str, torch.nn.Parameter]:
        """short name -> the parameter of each `Gradient___<name>` anchor."""
        params = dict(self.model.named_parameters())
        anchors = {}
        for short, anchor in self.anchored.items():
            kind, _, name = anchor["long_name"].rpartition("___")
            if kind == "Gradient" and name in params:
                anchors[short] = params[name]
        return anchors

    @contextlib.contextmanager
    def watching(self, replicas: int):
        """One training call: note each micro-batch's gradient of every anchored weight as
        backward computes it (the runtime's [D][A][R] order), then keep what each anchor's
        output mode returns."""
        seen: dict[str, list[torch.Tensor]] = {}
        handles = []
        for short, param in self._gradient_anchors().items():
            notes = seen.setdefault(short, [])
            handles.append(param.register_hook(lambda g, kept=notes: _note(kept, g)))
        try:
            yield
        finally:
            for handle in handles:
                handle.remove()
        for short, notes in seen.items():
            if notes:
                anchor = self.anchored[short]
                self.values[short] = returned(notes, replicas, self._mode(anchor),
                                              anchor.get("output_return_period", 1))

    def _mode(self, anchor: dict) -> OutputMode:
        mode = anchor.get("output_mode", OutputMode.Default)
        mode = self.output_mode if mode == OutputMode.Default else mode
        return OutputMode.Final if mode == OutputMode.Default else mode  # training's default

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
        """The anchor's value; AssertionError, as PopTorch's, when there is none."""
        known = ", ".join(self.anchored) or "none (use opts.anchorTensor)"
        assert short_name in self.anchored, (
            f"No tensor with name {short_name} found. Anchored: {known}")
        assert short_name in self.values, (
            f"No tensor with name {short_name} found: it has no value yet; run a training "
            f"step first")
        return self.values[short_name]


def _note(kept: list, gradient: torch.Tensor) -> None:
    """A tensor hook that keeps a copy of the gradient and leaves it unchanged (returns None)."""
    kept.append(gradient.detach().clone())


def returned(values: list[torch.Tensor], replicas: int, mode: OutputMode,
             period: int = 1) -> torch.Tensor:
    """What an anchor returns of a call's per-micro-batch values, given in [D][A][R] order."""
    if mode == OutputMode.All:
        picked = values
    elif mode == OutputMode.Sum:
        picked = [torch.stack(values[r::replicas]).sum(0) for r in range(replicas)]
    elif mode == OutputMode.EveryN:
        picked = [v for i, v in enumerate(values) if (i // replicas + 1) % period == 0]
    else:  # Final: the last micro-batch of each replica
        picked = values[-replicas:]
    if len(picked) == 1:
        return picked[0]
    if not picked:  # a return period longer than the call: no micro-batch comes back
        return values[0].reshape(-1, *values[0].shape[1:])[:0]
    return torch.cat([v.reshape(1) if v.dim() == 0 else v for v in picked])
