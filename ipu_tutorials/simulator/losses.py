"""The model's loss as PopTorch finds it: where backward starts, returned by forward or not.

PyTorch's loss functions and poptorch.identity_loss mark losses; a loss that feeds another is
not final, and a training graph has exactly one final loss (PopTorch's
RemoveSurplusIdentityLosses.cpp). PopTorch finds it in its graph, so backward starts there even
when forward returns only a value computed from it: Lightning 2.0.9's `test_stages_correct`
returns `(loss - loss) + 1`, which trained on IPUs. The runtime takes the loss from forward's
outputs when it is one of them, else it collects the losses forward computes and takes the
final one by its place in the order the capture saw them.
"""
from __future__ import annotations

import contextlib
import dataclasses

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten

from ..errors import Error
from . import tracing

LOSS_FUNCTIONS = {"cross_entropy", "nll_loss", "binary_cross_entropy", "kl_div",
                  "binary_cross_entropy_with_logits", "ctc_loss"}


class LossMode(TorchFunctionMode):
    """Marks the results of PyTorch loss functions (PopTorch turns each into a loss node)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = getattr(func, "__name__", "")
        if (name.endswith("_loss") or name in LOSS_FUNCTIONS) and isinstance(out, torch.Tensor):
            tracing.mark_loss(out)
        return out


@dataclasses.dataclass(frozen=True)
class LossLocator:
    """Where a training graph's final loss is: the index of forward's flattened output leaf
    that is the loss, else (None) its place among the losses forward computes, in order."""

    output: int | None
    computed: int | None

    @contextlib.contextmanager
    def collecting(self):
        """Around one forward pass: yields the list the computed losses go to (None when the
        loss is returned, so a forward that returns it runs with no mode at all)."""
        if self.output is not None:
            yield None
            return
        with tracing.collecting_losses() as losses, LossMode():
            yield losses

    def pick(self, outputs, computed: list[torch.Tensor] | None) -> torch.Tensor:
        if self.output is not None:
            return tree_flatten(outputs)[0][self.output]
        if self.computed is None or self.computed >= len(computed):
            raise Error(f"forward computed {len(computed)} loss(es) in this call, but its "
                        f"final loss at compile was loss number {self.computed + 1}: forward "
                        f"must compute its loss the same way at every call")
        return computed[self.computed]


def verify_loss(graph) -> None:
    """A training graph (capture.Graph) has exactly one final loss."""
    losses_found = graph.losses_found
    if losses_found == 0:
        raise Error("Couldn't find a loss in graph: a trainingModel computes "
                    "its loss and returns it (e.g. `return output, loss`). Use a PyTorch loss "
                    "(torch.nn.CrossEntropyLoss, F.mse_loss, ...) or wrap a hand-made one in "
                    "poptorch.identity_loss(x, reduction=\"mean\").")
    if losses_found > 1:
        raise Error(f"Multiple independent losses found in graph. Graph must have one final "
                    f"loss. Wrap final graph loss in poptorch.identity_loss. Found "
                    f"{losses_found} independent losses: combine them and wrap the total, "
                    f"e.g. poptorch.identity_loss(loss1 + loss2, reduction=\"none\").")
