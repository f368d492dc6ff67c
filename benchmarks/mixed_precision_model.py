"""The model of Graphcore's PopTorch mixed-precision tutorial, and its training setup.

Rebuilt from the tutorial's description (graphcore/tutorials, tutorials/pytorch/mixed_precision,
SDK 3.1): two convolutions on 128x128 FashionMNIST images, GroupNorm, two linear layers,
log-softmax and NLL loss; AdamW (lr 0.001), batch 12; `--execution-half` casts the model and
data to float16, `--optimizer-half` keeps the optimizer's accumulators in float16 with a loss
scale of 1024. Its data comes from a download, so the benchmarks use random data of the same
shapes instead (offline first).
"""
import torch
import torch.nn as nn

from ipu_tutorials import poptorch

BATCH, IMAGE, CLASSES = 12, 128, 10
TRAIN_IMAGES, TEST_IMAGES = 60_000, 10_000  # FashionMNIST's sizes


class CustomModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 5, 3)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(5, 12, 5)
        self.norm = nn.GroupNorm(3, 12)
        self.fc1 = nn.Linear(41772, 100)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(100, 10)
        self.log_softmax = nn.LogSoftmax(dim=0)  # dim=0 as in the tutorial
        self.loss = nn.NLLLoss()

    def forward(self, x, labels=None):
        x = self.pool(self.relu(self.conv1(x)))  # (B, 5, 63, 63)
        x = self.norm(self.relu(self.conv2(x)))  # (B, 12, 59, 59)
        x = torch.flatten(x, start_dim=1)  # (B, 41772)
        x = self.relu(self.fc1(x))
        x = self.log_softmax(self.fc2(x))
        if self.training:
            return x, self.loss(x, labels)
        return x


def synthetic_images(count: int, half: bool, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Random images in [-1, 1] (the tutorial's normalisation) and labels, FashionMNIST-shaped."""
    generator = torch.Generator().manual_seed(seed)
    images = torch.rand(count, 1, IMAGE, IMAGE, generator=generator) * 2 - 1
    labels = torch.randint(0, CLASSES, (count,), generator=generator)
    return (images.half() if half else images), labels


def training_model(execution_half: bool, optimizer_half: bool, stochastic_rounding: bool = False,
                   partials_half: bool = False, seed: int = 0):
    """The tutorial's trainingModel with its four switches."""
    torch.manual_seed(seed)
    model = CustomModel()
    if execution_half:
        model = model.half()
    accum, loss_scaling = (torch.float16, 1024) if optimizer_half else (torch.float32, None)
    optimizer = poptorch.optim.AdamW(params=model.parameters(), lr=0.001, accum_type=accum,
                                     loss_scaling=loss_scaling or 1.0)
    opts = poptorch.Options().showCompilationProgressBar(False)
    opts.Precision.enableStochasticRounding(stochastic_rounding)
    opts.Precision.setPartialsType(torch.half if partials_half else torch.float)
    return model, opts, poptorch.trainingModel(model, options=opts, optimizer=optimizer)
