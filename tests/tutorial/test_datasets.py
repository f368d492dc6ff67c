"""The embedded digits: real, balanced, deterministic, and the fallback when MNIST is absent."""
import pytest
import torch

from ipu_tutorials.tutorial.datasets import MEAN, STD, embedded_digits, load_mnist


def test_embedded_split_is_balanced_and_disjoint():
    train, test = embedded_digits(True), embedded_digits(False)
    assert len(train) == 4000 and len(test) == 1000
    assert train.labels.bincount().tolist() == [400] * 10
    assert test.labels.bincount().tolist() == [100] * 10
    train_images = {bytes(x.numpy().tobytes()) for x in train.images[:200]}
    assert not any(bytes(x.numpy().tobytes()) in train_images for x in test.images)


def test_images_are_normalised_like_the_tutorial():
    images = embedded_digits(True).images
    assert images.shape == (4000, 1, 28, 28)
    assert images.min().item() == pytest.approx(-MEAN / STD)
    assert 0.05 < (images * STD + MEAN).mean().item() < 0.2  # mostly dark background


def test_loading_is_deterministic():
    assert torch.equal(embedded_digits(False).images, embedded_digits(False).images)


def test_batches_come_from_one_gather():
    dataset = embedded_digits(False)
    loader = torch.utils.data.DataLoader(dataset, batch_size=100)
    images, labels = next(iter(loader))
    assert images.shape == (100, 1, 28, 28) and torch.equal(labels, dataset.labels[:100])


def test_auto_falls_back_to_the_embedded_digits_offline(tmp_path, monkeypatch):
    monkeypatch.setattr("socket.getaddrinfo", _no_network)
    dataset = load_mnist(train=False, source="auto", data_dir=str(tmp_path))
    assert "embedded" in dataset.name and len(dataset) == 1000


def test_unknown_source():
    with pytest.raises(ValueError, match="unknown dataset source 'cifar'"):
        load_mnist(source="cifar")


def _no_network(*args, **kwargs):
    raise OSError("network disabled by the test")
