"""The tutorial's models: the MNIST network's shapes and blocks, losses inside forward, the
transformer's shapes and placement, and accuracy."""
import pytest
import torch

from ipu_tutorials.simulator.capture import capture
from ipu_tutorials.tutorial.models import (Network, Regression, TrainingModelWithLoss,
                                           TransformerLM, WithMSELoss, accuracy, parameter_count,
                                           split_layers)


def test_the_network_maps_digits_to_ten_scores_through_blocks_b1_to_b4(seed):
    net = Network()
    assert net(torch.zeros(3, 1, 28, 28)).shape == (3, 10)
    assert list(capture(net, (torch.zeros(1, 1, 28, 28),), {}).blocks) == ["B1", "B2", "B3", "B4"]
    assert parameter_count(net) == 10 * 25 + 10 + 20 * 250 + 20 + 320 * 256 + 256 + 2570


def test_losses_inside_forward_equal_plain_pytorch(seed):
    net, x, labels = Network(), torch.randn(4, 1, 28, 28), torch.tensor([1, 2, 3, 4])
    output, loss = TrainingModelWithLoss(net)(x, labels)
    assert torch.allclose(loss, torch.nn.functional.cross_entropy(net(x), labels), atol=1e-5)
    assert TrainingModelWithLoss(net)(x).shape == (4, 10)
    model, x, y = Regression(), torch.randn(6, 5), torch.randn(6, 3)
    out, mse = model(x, y)
    assert torch.allclose(mse, ((model.fc(x) - y) ** 2).mean(), atol=1e-6)
    assert WithMSELoss(model.fc)(x, y)[1].item() == pytest.approx(mse.item())


def test_the_transformer_returns_logits_and_its_layers_split_over_ipus(seed):
    model = TransformerLM(vocab=50, width=16, depth=4, heads=2, context=8)
    tokens = torch.randint(0, 50, (2, 8))
    assert model(tokens).shape == (2, 8, 50)
    logits, loss = model(tokens, tokens)
    assert loss.item() == pytest.approx(
        torch.nn.functional.cross_entropy(logits.flatten(0, 1), tokens.flatten()).item(), abs=1e-5)
    split_layers(model, [1, 3])
    assert capture(model, (tokens,), {}).blocks == {"layers0-0": 0, "layers1-3": 1, "head": 1}
    with pytest.raises(ValueError, match=r"layers_per_ipu \[1, 1\] places 2 layers, but the "
                                         r"model has 4"):
        split_layers(model, [1, 1])


def test_accuracy_uses_the_last_labels_when_fewer_predictions_came_back():
    predictions = torch.tensor([[0.2, 0.8], [0.9, 0.1]])
    assert accuracy(predictions, torch.tensor([1, 1])) == 50.0
    assert accuracy(predictions[1:], torch.tensor([1, 1, 0])) == 100.0
