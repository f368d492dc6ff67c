"""A tiny LightningModule and Trainer settings that leave nothing behind."""
import pytest
import torch

pl = pytest.importorskip("lightning.pytorch")

import ipu_tutorials.lightning  # noqa: E402,F401  (registers "ipu")


class Tiny(pl.LightningModule):
    """A linear classifier with every step; lr and optimizer are chosen per test."""

    def __init__(self, optimizer: str = "sgd", lr: float = 0.1):
        super().__init__()
        torch.manual_seed(0)
        self.layer = torch.nn.Linear(4, 3)
        self.optimizer, self.lr = optimizer, lr
        self.train_losses = []

    def forward(self, x):
        return self.layer(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.cross_entropy(self(x), y)

    def on_train_batch_end(self, outputs, batch, batch_idx):
        self.train_losses.append(outputs["loss"].detach().clone())

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", torch.nn.functional.cross_entropy(self(x), y))

    def test_step(self, batch, batch_idx):
        x, y = batch
        self.log("test_acc", (self(x).argmax(-1) == y).float().mean())

    def predict_step(self, batch, batch_idx):
        return self(batch[0])

    def configure_optimizers(self):
        if self.optimizer == "adam":
            return torch.optim.Adam(self.parameters(), lr=self.lr)
        return torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9)


def data(n: int = 64):
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(n, 4, generator=generator)
    y = torch.randint(0, 3, (n,), generator=generator)
    return torch.utils.data.TensorDataset(x, y)


def loader(n: int = 64, batch_size: int = 4, **kwargs):
    return torch.utils.data.DataLoader(data(n), batch_size=batch_size, **kwargs)


@pytest.fixture
def trainer_kwargs(tmp_path):
    """Quiet, offline Trainer settings writing only under tmp_path."""
    return dict(accelerator="ipu", default_root_dir=str(tmp_path), logger=False,
                enable_checkpointing=False, enable_progress_bar=False,
                enable_model_summary=False, max_epochs=1, num_sanity_val_steps=0)


@pytest.fixture(name="Tiny")
def tiny_class():
    return Tiny


@pytest.fixture(name="loader")
def loader_factory():
    return loader
