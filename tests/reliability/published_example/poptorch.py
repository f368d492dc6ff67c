"""`import poptorch` -> ipu_tutorials.poptorch (the import swap), and CIFAR-10 -> FakeData.

The example downloads CIFAR-10; the test must not touch the network, so torchvision's FakeData
(random 3x32x32 images, 10 classes, the same for a given index in every process) stands in.
"""
import sys

import torchvision

import ipu_tutorials.poptorch as _facade

SAMPLES = 256  # per split: one call per instance of the example's 64 x 2 local replicas


def _offline_cifar10(root, train=True, transform=None, target_transform=None, download=False):
    return torchvision.datasets.FakeData(size=SAMPLES, image_size=(3, 32, 32), num_classes=10,
                                         transform=transform, target_transform=target_transform,
                                         random_offset=0 if train else SAMPLES)


torchvision.datasets.CIFAR10 = _offline_cifar10
sys.modules[__name__] = _facade
