"""Anchors: gradients and updated weights kept for getAnchoredTensor, with clear errors."""
import pytest
import torch

from ipu_tutorials.poptorch._anchors import Anchors


def anchors(*pairs):
    model = torch.nn.Linear(2, 1)
    return model, Anchors(model, {short: [long, True, None, 1] for short, long in pairs})


def test_a_gradient_anchor_keeps_the_scaled_gradient_of_its_weight():
    model, kept = anchors(("g", "Gradient___weight"))
    grad = torch.tensor([[2.0, 4.0]])
    kept.record({model.weight: grad, model.bias: torch.ones(1)}, scale=0.5)
    assert torch.equal(kept.get("g"), torch.tensor([[1.0, 2.0]]))
    grad.zero_()  # the anchor holds a copy, not the accumulator
    assert torch.equal(kept.get("g"), torch.tensor([[1.0, 2.0]]))


def test_an_updated_var_anchor_keeps_the_weight_after_the_update():
    model, kept = anchors(("w", "UpdatedVar___bias"))
    kept.record_updated_weights()
    assert torch.equal(kept.get("w"), model.bias.detach())
    assert not kept.get("w").requires_grad


def test_unknown_and_not_yet_recorded_anchors_say_what_to_do():
    _, kept = anchors(("g", "Gradient___weight"))
    # PopTorch asserts (python/_poplar_executor.py: getAnchoredTensor), in these words
    with pytest.raises(AssertionError, match=r"No tensor with name x found. Anchored: g"):
        kept.get("x")
    with pytest.raises(AssertionError, match=r"No tensor with name g found: it has no value yet; "
                                             r"run a training step first"):
        kept.get("g")
    _, empty = anchors()
    with pytest.raises(AssertionError, match=r"Anchored: none \(use opts.anchorTensor\)"):
        empty.get("g")


def test_anchors_of_popart_named_scalars_take_the_recorded_values():
    _, kept = anchors(("ls", "finalLossScale"), ("g", "Gradient___weight"))
    kept.record_values({"finalLossScale": torch.tensor(8.0), "lossScaleUpdateFactor": torch.tensor(2.0)})
    assert kept.get("ls").item() == 8.0
    with pytest.raises(AssertionError, match="has no value yet"):
        kept.get("g")
