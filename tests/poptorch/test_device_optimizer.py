"""The optimizer as the device holds it: the supported types, a snapshot of its
hyperparameters, and constants that a new optimizer may not change."""
import warnings

import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.poptorch._device_optimizer import DeviceOptimizer, optimizer_kind, same_family


def params():
    return [torch.nn.Parameter(torch.ones(2))]


def test_the_kind_is_the_natively_supported_type_it_derives_from():
    assert optimizer_kind(poptorch.optim.AdamW(params())) is poptorch.optim.AdamW
    assert optimizer_kind(torch.optim.SGD(params(), lr=0.1)) is torch.optim.SGD
    with pytest.raises(AssertionError, match=r"Unsupported optimizer type Adagrad"):
        optimizer_kind(torch.optim.Adagrad(params()))
    with pytest.raises(ValueError, match=r"Only non-amsgrad Adam/AdamW"):
        optimizer_kind(torch.optim.Adam(params(), amsgrad=True))
    assert same_family(poptorch.optim.SGD, torch.optim.SGD)
    assert not same_family(poptorch.optim.SGD, torch.optim.Adam)


def test_a_changed_default_is_a_compiled_constant_and_lr_is_always_variable():
    optimizer = torch.optim.SGD(params(), lr=0.1)
    device = DeviceOptimizer(optimizer)
    device.check_constants(torch.optim.SGD(params(), lr=0.5))  # lr may change
    with pytest.raises(ValueError, match=r"param_groups\[0\]\['momentum'\] changed from 0 to 0.9, "
                                         r"but 'momentum' is a constant of the compiled model"):
        device.check_constants(torch.optim.SGD(params(), lr=0.1, momentum=0.9))
    explicit = DeviceOptimizer(torch.optim.SGD(params(), lr=0.1, momentum=0.5))
    explicit.check_constants(torch.optim.SGD(params(), lr=0.1, momentum=0.9))  # passed: variable


def test_edits_after_wrapping_are_not_applied_and_warn_once():
    optimizer = torch.optim.SGD(params(), lr=0.1)
    device = DeviceOptimizer(optimizer)
    optimizer.param_groups[0]["lr"] = 0.5
    with pytest.warns(UserWarning, match=r"call poptorch_model.setOptimizer\(optimizer\)"):
        with device.applied(optimizer):
            assert optimizer.param_groups[0]["lr"] == 0.1  # what the device uses
    assert optimizer.param_groups[0]["lr"] == 0.5  # the user's edit is back
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with device.applied(optimizer):
            pass
