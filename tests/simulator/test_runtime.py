"""The runtime: gradient accumulation, reductions and output modes, checked against PyTorch."""
import copy

import pytest
import torch
import torch.nn as nn

from ipu_tutorials import poptorch


def test_float16_accumulators_keep_a_running_mean_that_cannot_overflow(options):
    # was wrong: float16 accumulators summed the micro-batch gradients and overflowed.
    class Big(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.zeros(1))

        def forward(self, x):
            return poptorch.identity_loss(self.w * x, reduction="sum")

    model = Big()
    sgd = poptorch.optim.SGD(model.parameters(), lr=1e-6, accum_type=torch.float16)
    training = poptorch.trainingModel(model, options(a=4), sgd)
    assert (training.options.Training.meanAccumulationAndReplicationReductionStrategy ==
            poptorch.MeanReductionStrategy.Running)
    training(torch.full((4,), 30000.0))  # each gradient is 30,000; their sum overflows float16
    assert model.w.item() == pytest.approx(-1e-6 * 30000, rel=1e-3)


def test_sum_output_mode_passes_non_tensor_outputs_through(options):
    # was wrong: OutputMode.Sum tried to add non-tensor outputs.
    class Tagged(nn.Module):
        def forward(self, x):
            return x * 2, "tag"

    out, tag = poptorch.inferenceModel(Tagged(), options(d=3).outputMode(
        poptorch.OutputMode.Sum))(torch.ones(3, 2))
    assert tag == "tag" and torch.equal(out, torch.full((1, 2), 6.0))


def test_gradients_left_on_the_host_before_wrapping_do_not_join_the_update(options):
    def trained(stale_grad: bool):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 1))
        if stale_grad:  # a CPU step left .grad behind
            model(torch.ones(2, 3)).sum().backward()
        wrapped = poptorch.trainingModel(_WithLoss(model), options(),
                                         torch.optim.SGD(model.parameters(), lr=0.1))
        wrapped(torch.ones(2, 3), torch.zeros(2, 1))
        return model[0].weight.detach().clone()

    torch.testing.assert_close(trained(stale_grad=True), trained(stale_grad=False))


class _WithLoss(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x, y):
        out = self.model(x)
        return out, nn.functional.mse_loss(out, y)


def test_a_loss_no_trainable_weight_feeds_trains_without_a_gradient():
    # was wrong: backward() failed when every weight was frozen (fine-tuning nothing, eval layers)
    class Frozen(nn.Module):
        def __init__(self):
            super().__init__()
            self.bn = nn.BatchNorm1d(3)
            self.bn.requires_grad_(False)
            self.bn.eval()

        def forward(self, x, target):
            y = self.bn(x)
            return y, nn.functional.mse_loss(y, target)

    torch.manual_seed(0)
    model, x, target = Frozen(), torch.randn(4, 3), torch.randn(4, 3)
    expected_out, expected_loss = model(x, target)
    weights = copy.deepcopy(model.state_dict())
    out, loss = poptorch.trainingModel(model)(x, target)
    torch.testing.assert_close(out, expected_out, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(loss, expected_loss, rtol=1e-5, atol=1e-5)
    for name, value in model.state_dict().items():
        assert torch.equal(value, weights[name]), name
