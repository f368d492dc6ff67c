"""The tutorial's CNN as a LightningModule, shared by lightning_mnist.py and the lesson."""
from __future__ import annotations

import lightning.pytorch as pl
import torch

from .. import poptorch
from .models import Network, TrainingModelWithLoss


class MnistClassifier(pl.LightningModule):
    """The pipelining tutorial's CNN (blocks B1..B4) with its loss in block B4, trained by Adam.

    Nothing here is IPU-specific: the same module trains on a CPU with a plain Trainer. The
    steps return their values instead of calling `self.log`, which real IPUs could not trace;
    the epoch-end hooks log them.
    """

    def __init__(self, learning_rate: float = 0.001):
        super().__init__()
        self.model = TrainingModelWithLoss(Network())
        self.learning_rate = learning_rate
        self.test_correct = self.test_seen = 0

    def forward(self, images):
        return self.model(images)

    def training_step(self, batch, batch_idx):
        images, labels = batch
        _, loss = self.model(images, labels)
        return loss

    def test_step(self, batch, batch_idx):
        images, labels = batch
        output = self.model(images)
        with poptorch.Block("B4"):  # once a model uses blocks, every op needs one
            return output.argmax(dim=-1) == labels  # (B,) bool

    def on_test_epoch_start(self):
        self.test_correct = self.test_seen = 0

    def on_test_batch_end(self, outputs, batch, batch_idx, dataloader_idx=0):
        self.test_correct += int(outputs.sum())
        self.test_seen += outputs.numel()

    def on_test_epoch_end(self):
        self.log("test_accuracy", 100.0 * self.test_correct / max(self.test_seen, 1))

    def predict_step(self, batch, batch_idx):
        output = self.model(batch[0])
        with poptorch.Block("B4"):
            return output.argmax(dim=-1)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.learning_rate)
