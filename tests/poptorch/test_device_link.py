"""DeviceLink: attaching and detaching a wrapped model, and what needs it compiled."""
import pytest
import torch
from torch import nn

from ipu_tutorials import poptorch


def test_calling_a_detached_model_reattaches_it():  # attach_detach_test
    model = poptorch.inferenceModel(nn.Linear(2, 1))
    model(torch.ones(1, 2))
    model.detachFromDevice()
    model(torch.ones(1, 2))
    assert model.isAttachedToDevice()


def test_attaching_uploads_the_host_weights():  # PopTorch's _on_device_attach
    host = nn.Linear(2, 1)
    model = poptorch.inferenceModel(host)
    model(torch.ones(1, 2))
    model.detachFromDevice()
    with torch.no_grad():
        host.bias += 1.0  # changed on the host while detached
    torch.testing.assert_close(model(torch.ones(1, 2)), host(torch.ones(1, 2)))


def test_detaching_an_uncompiled_or_detached_model_is_refused():
    model = poptorch.inferenceModel(nn.Linear(2, 1))
    assert not model.isCompiled() and not model.isAttachedToDevice()
    with pytest.raises(poptorch.Error):
        model.detachFromDevice()
    model(torch.ones(1, 2))
    model.detachFromDevice()
    with pytest.raises(poptorch.Error, match="not attached"):
        model.detachFromDevice()
    model.attachToDevice()
    with pytest.raises(poptorch.Error, match="already attached"):
        model.attachToDevice()


def test_tensor_names_and_the_random_state_need_a_compiled_model():
    model = poptorch.inferenceModel(nn.Linear(2, 1))
    with pytest.raises(AssertionError, match="Model must be compiled before calling "
                                             "getTensorNames"):  # PopTorch asserts
        model.getTensorNames()
    with pytest.raises(poptorch.Error):
        model.rng_state
    model(torch.ones(1, 2))
    assert model.getTensorNames() == ["weight", "bias", "output0"]
    state = model.rng_state
    torch.rand(3)
    model.rng_state = state
    assert torch.equal(torch.get_rng_state(), state)
