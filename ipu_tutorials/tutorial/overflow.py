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
