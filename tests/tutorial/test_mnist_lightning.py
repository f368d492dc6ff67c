"""MnistClassifier: the tutorial's CNN as a LightningModule whose steps return values (no
self.log in a step) and whose test hooks count the correct digits."""
import pytest
import torch

pytest.importorskip("lightning.pytorch")

from ipu_tutorials.tutorial.mnist_lightning import MnistClassifier  # noqa: E402


def test_the_steps_compute_the_networks_loss_and_predictions(seed):
    model = MnistClassifier(learning_rate=0.01)
    images, labels = torch.randn(4, 1, 28, 28), torch.tensor([0, 1, 2, 3])
    scores = model(images)
    assert scores.shape == (4, 10)
    expected = torch.nn.functional.cross_entropy(scores, labels)
    assert model.training_step((images, labels), 0).item() == pytest.approx(expected.item(), abs=1e-5)
    assert torch.equal(model.predict_step((images,), 0), scores.argmax(-1))
    optimizer = model.configure_optimizers()
    assert isinstance(optimizer, torch.optim.Adam) and optimizer.defaults["lr"] == 0.01


def test_the_test_hooks_count_correct_digits_over_the_epoch(seed):
    model = MnistClassifier()
    logged = {}
    model.log = lambda name, value, **kwargs: logged.update({name: value})
    images = torch.randn(4, 1, 28, 28)
    labels = model(images).argmax(-1)
    model.on_test_epoch_start()
    for batch_labels in (labels, (labels + 1) % 10):  # all right, then all wrong
        correct = model.test_step((images, batch_labels), 0)
        model.on_test_batch_end(correct, None, 0)
    model.on_test_epoch_end()
    assert logged == {"test_accuracy": 50.0}
