"""Anchors: gradients and updated weights kept for getAnchoredTensor, as PopART returns them
(one micro-batch's gradient, picked by the output mode), with clear errors."""
import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.poptorch._anchors import Anchors, returned
from ipu_tutorials.poptorch.enums import OutputMode


def anchors(*pairs, mode=None):
    model = torch.nn.Linear(2, 1)
    # PopTorch's anchored_tensors form: [PopART name, given no mode, mode, return period]
    return model, Anchors(model, {short: [long, mode is None, mode, 1] for short, long in pairs})


def backward_of(model, xs):
    """One backward per micro-batch, as the runtime runs them; returns each one's bias grad."""
    grads = []
    for x in xs:
        model.bias.grad = None
        model(x).sum().backward()
        grads.append(model.bias.grad.clone())
    return grads


MICRO_BATCHES = [torch.full((3, 2), float(k)) for k in range(1, 7)]  # six different ones


def test_a_gradient_anchor_holds_the_last_micro_batchs_gradient_by_default():
    model, kept = anchors(("g", "Gradient___bias"))
    with kept.watching(replicas=1):
        grads = backward_of(model, MICRO_BATCHES)
    assert torch.equal(kept.get("g"), grads[-1])
    model.bias.grad.zero_()  # the anchor holds a copy, not the accumulator
    assert torch.equal(kept.get("g"), grads[-1])


def test_the_output_mode_picks_the_micro_batches_laid_along_the_first_dimension():
    values = [torch.tensor([float(k), -float(k)]) for k in range(6)]  # [D=3][R=2] of a (2,)
    assert torch.equal(returned(values, 2, OutputMode.Final), torch.tensor([4., -4., 5., -5.]))
    assert torch.equal(returned(values, 2, OutputMode.All), torch.cat(values))
    assert torch.equal(returned(values, 2, OutputMode.Sum), torch.tensor([6., -6., 9., -9.]))
    assert torch.equal(returned(values, 2, OutputMode.EveryN, 3), torch.cat(values[4:]))
    assert torch.equal(returned(values[:1], 1, OutputMode.All), values[0])  # one: its shape
    assert returned(values[:1], 1, OutputMode.EveryN, 4).shape == (0,)  # none in this call
    scalars = [torch.tensor(2.0), torch.tensor(3.0)]
    assert torch.equal(returned(scalars, 1, OutputMode.All), torch.tensor([2.0, 3.0]))


def test_an_anchor_given_no_mode_takes_the_models():
    model = torch.nn.Linear(2, 1)
    kept = Anchors(model, {"g": ["Gradient___bias", True, None, 1]}, OutputMode.All)
    with kept.watching(replicas=1):
        grads = backward_of(model, MICRO_BATCHES[:3])
    assert torch.equal(kept.get("g"), torch.cat(grads))


def test_the_hooks_leave_with_the_call():
    model, kept = anchors(("g", "Gradient___bias"))
    with kept.watching(replicas=1):
        backward_of(model, MICRO_BATCHES[:1])
    first = kept.get("g")
    backward_of(model, MICRO_BATCHES[1:])  # plain PyTorch afterwards: not an IPU call
    assert torch.equal(kept.get("g"), first)


class Regression(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(5, 3)

    def forward(self, x, y):
        out = self.fc(x)
        return out, torch.nn.functional.mse_loss(out, y)


def test_a_training_model_anchors_one_micro_batch_while_its_update_uses_the_mean(options):
    torch.manual_seed(0)
    net = Regression()
    before = Regression()
    before.load_state_dict(net.state_dict())
    opts = options(a=4)
    opts.anchorTensor("last", "Gradient___fc.bias")  # PopTorch's anchorTensor returns None
    opts.anchorTensor("each", "Gradient___fc.bias", poptorch.OutputMode.All)
    opts.anchorTensor("new", "UpdatedVar___fc.bias")
    model = poptorch.trainingModel(net, opts, poptorch.optim.SGD(net.parameters(), lr=0.1))
    x, y = torch.randn(8, 5), torch.randn(8, 3)  # 4 different micro-batches of 2
    model(x, y)
    each = [torch.autograd.grad(before(xm, ym)[1], before.fc.bias)[0]
            for xm, ym in zip(x.chunk(4), y.chunk(4))]
    mean = torch.stack(each).mean(0)
    torch.testing.assert_close(model.getAnchoredTensor("last"), each[-1])  # Final
    torch.testing.assert_close(model.getAnchoredTensor("each"), torch.cat(each))  # All: (12,)
    assert not torch.allclose(each[-1], mean, atol=1e-3)  # the data tells them apart
    torch.testing.assert_close(model.getAnchoredTensor("new"), before.fc.bias - 0.1 * mean)


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
