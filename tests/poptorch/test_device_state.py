"""Device state across models: weight uploads and the one-training-wrapper rule."""
import gc

import torch
import torch.nn as nn

from ipu_tutorials import poptorch
from ipu_tutorials.tutorial.models import WithMSELoss


def test_a_dropped_training_wrapper_does_not_keep_the_model_wrapped():
    # was wrong: the wrapper registry held wrappers strongly, so a dropped one still counted.
    net = WithMSELoss(nn.Linear(3, 2))
    poptorch.trainingModel(net)
    gc.collect()
    poptorch.trainingModel(net)  # the first wrapper is gone: no "already wrapped"


def test_inference_weights_are_uploaded_when_compiling(options):
    # was wrong: an inference model uploaded its weights at the first call, not at compile.
    net = nn.Linear(3, 2)
    model = poptorch.inferenceModel(net, options())
    x = torch.randn(1, 3)
    model.compile(x)
    compiled_with = net(x).detach()
    with torch.no_grad():
        net.weight.add_(1.0)  # trained on the CPU after compiling
    torch.testing.assert_close(model(x), compiled_with)


def test_uploading_named_buffers_changes_only_those_on_the_device_copy():
    from ipu_tutorials.poptorch._device_state import DeviceWeights

    host = nn.BatchNorm1d(2)
    weights = DeviceWeights(host, keep_copy=True)
    host.running_mean.fill_(3.0)
    host.running_var.fill_(5.0)
    weights.upload_buffers(["running_mean"])
    assert torch.equal(weights.copy.running_mean, torch.full((2,), 3.0))
    assert torch.equal(weights.copy.running_var, torch.ones(2))
