"""`import poptorch` -> ipu_tutorials.poptorch (the import swap), plus offline CIFAR-10 stand-ins."""
import sys

import torch
import torchvision

import ipu_tutorials.poptorch as _facade


class _OfflineCIFAR10(torch.utils.data.Dataset):
    """Random 3x32x32 images with CIFAR-10's labels: the example must not download."""

    def __init__(self, root, train=True, download=False, transform=None):
        generator = torch.Generator().manual_seed(0 if train else 1)
        self.images = torch.randn(256, 3, 32, 32, generator=generator)
        self.labels = torch.randint(0, 10, (len(self.images),), generator=generator)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        return self.images[index], int(self.labels[index])


torchvision.datasets.CIFAR10 = _OfflineCIFAR10
sys.modules[__name__] = _facade
