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
        assert device.view(optimizer).param_groups[0]["lr"] == 0.1  # what the device uses
    assert optimizer.param_groups[0]["lr"] == 0.5  # the user's edit stays
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        device.view(optimizer)


def test_the_device_view_shares_weights_and_state_but_holds_its_own_values():
    optimizer = poptorch.optim.SGD(params(), lr=0.1, momentum=0.9, loss_scaling=8.0,
                                   max_grad_norm=2.0)
    device = DeviceOptimizer(optimizer)
    optimizer.loss_scaling, optimizer.max_grad_norm = 16.0, 4.0
    optimizer.step = 0  # an attribute of the user's, not the device's
    with pytest.warns(UserWarning, match=r"setOptimizer"):
        view = device.view(optimizer)
    assert (view.loss_scaling, view.max_grad_norm, device.loss_scaling) == (8.0, 2.0, 8.0)
    assert view.state is optimizer.state
    assert view.param_groups[0]["params"] is optimizer.param_groups[0]["params"]
    assert type(view) is poptorch.optim.SGD and callable(view.step)
    assert DeviceOptimizer(torch.optim.SGD(params(), lr=0.1)).loss_scaling == 1.0


def test_popart_type_names_follow_the_variant():
    from ipu_tutorials.poptorch._device_optimizer import popart_type_name
    assert popart_type_name(poptorch.optim.SGD(params(), lr=0.1)) == "SGD2"
    assert popart_type_name(poptorch.optim.SGD(params(), lr=0.1, use_combined_accum=True)) == "SGD1"
    assert popart_type_name(poptorch.optim.AdamW(params(), bias_correction=False)) == "ADAMW_NO_BIAS"
    assert popart_type_name(poptorch.optim.LAMB(params())) == "LAMB"
    assert popart_type_name(torch.optim.Adam(params())) == "ADAM"
    assert popart_type_name(torch.optim.RMSprop(params(), centered=True)) == "RMSPROP_CENTERED"


@pytest.mark.parametrize("relaxed, level", [(False, "WARNING"), (True, "DEBUG")])
def test_attributes_added_after_the_first_check_are_reported_once(caplog, relaxed, level):
    from ipu_tutorials.poptorch._device_optimizer import AttributeTracker
    optimizer = poptorch.optim.SGD([{"params": params()}, {"params": params()}], lr=0.1)
    optimizer.param_groups[0]["known"] = 1  # present at the first check: recorded
    tracker = AttributeTracker(relaxed)
    with caplog.at_level("DEBUG", logger="poptorch"):
        tracker.check(optimizer)
        assert caplog.records == []
        optimizer.step = 0
        optimizer._private = 1  # bookkeeping names are never reported
        optimizer.param_groups[1]["initial_lr"] = 0.1
        tracker.check(optimizer)
        tracker.check(optimizer)
    messages = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert messages == [
        (level, "Ignoring unexpected optimizer attribute in SGD2 optimizer: ['step']"),
        (level, "Ignoring unexpected group 1 attribute in SGD2 optimizer: ['initial_lr']")]
