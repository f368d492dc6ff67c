"""A digit classifier whose hand-written log-softmax trains in float32 and breaks in float16.

Lesson 11 hunts the op that first produces an infinity; its exercises swap in a fixed
log-softmax. float16's largest value is 65504, so exp(z) overflows once a logit passes
log(65504) = 11.09, and a probability below float16's smallest subnormal (2**-24) rounds to 0,
whose log is -inf. float32 holds both (exp overflows past 88.7).
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


class HandWrittenLogSoftmax(nn.Module):
    """log(exp(z) / sum(exp(z))), written as the formula reads."""

    def forward(self, z):  # z: (B, 10)
        e = torch.exp(z)
        return torch.log(e / e.sum(dim=-1, keepdim=True))


class SharpClassifier(nn.Module):
    """Flatten -> Linear(784, 64) -> ReLU -> Linear(64, 10) -> x sharpness -> log-softmax.

    Returns log-probabilities, and with labels also the NLL loss (the loss last, as PopTorch
    expects). `log_softmax` is any module or function of the logits (the exercises' fixes).
    """

    def __init__(self, log_softmax=None, sharpness: float = 8.0):
        super().__init__()
        self.features = nn.Sequential(nn.Flatten(), nn.Linear(784, 64), nn.ReLU())
        self.classifier = nn.Linear(64, 10)
        self.sharpness = sharpness
        self.log_softmax = log_softmax if log_softmax is not None else HandWrittenLogSoftmax()

    def forward(self, images, labels=None):  # images: (B, 1, 28, 28)
        logits = self.classifier(self.features(images)) * self.sharpness  # (B, 10)
        log_p = self.log_softmax(logits)
        if labels is None:
            return log_p
        return log_p, F.nll_loss(log_p.float(), labels)


def float16_options(exceptions: bool = False):
    """Options for SharpClassifier's float16 runs: one step per call, no progress bar."""
    from .. import poptorch

    opts = poptorch.Options().showCompilationProgressBar(False).randomSeed(0)
    opts.Precision.enableFloatingPointExceptions(exceptions)
    return opts


def train_until_not_finite(model: nn.Module, dataset, steps: int, lr: float = 0.01,
                           batch_size: int = 16, half: bool = True) -> dict:
    """Train `model` (float16 when `half`) for up to `steps` steps; stop at the first step whose
    loss is not finite.

    Returns:
        {"losses": every step's loss, "failed_step": that step or None, and, when it failed,
        "weights_before": the state_dict before it and "batch": its (images, labels)}, so the
        failing step can be replayed (with floating-point exceptions on, say).
    """
    from .. import poptorch

    opts = float16_options()
    model = model.half() if half else model
    loader = poptorch.DataLoader(opts, dataset, batch_size=batch_size, shuffle=True)
    training = poptorch.trainingModel(model, opts, poptorch.optim.SGD(model.parameters(), lr=lr))
    result = {"losses": [], "failed_step": None}
    for step, (images, labels) in enumerate(loader):
        if step == steps:
            break
        before = {k: v.clone() for k, v in model.state_dict().items()}
        _, loss = training(images.half() if half else images, labels)
        result["losses"].append(float(loss))
        if not torch.isfinite(loss):
            result.update(failed_step=step, weights_before=before, batch=(images, labels))
            break
    training.destroy()
    return result


def replay(log_softmax, weights: dict, batch: tuple, exceptions: bool = True):
    """One float16 training step of SharpClassifier(log_softmax) from `weights` on `batch`.

    Returns:
        The step's loss.
    Raises:
        poptorch.Error: a floating-point exception, when `exceptions` is on.
    """
    from .. import poptorch

    model = SharpClassifier(log_softmax).half()
    model.load_state_dict(weights)
    training = poptorch.trainingModel(model, float16_options(exceptions),
                                      poptorch.optim.SGD(model.parameters(), lr=0.01))
    images, labels = batch
    try:
        return training(images.half(), labels)[1]
    finally:
        training.destroy()
