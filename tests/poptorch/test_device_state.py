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
