"""_optimizer_base.py: the update poptorch.optim's optimizers share, and what each one holds."""
import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.poptorch._optimizer_base import _given

optim = poptorch.optim


def weights():
    return [torch.nn.Parameter(torch.linspace(-1, 1, 6).reshape(2, 3))]


def test_an_argument_left_at_none_takes_torchs_default_as_poptorch_does():
    assert _given(lr=0.1, momentum=None, nesterov=False) == {"lr": 0.1, "nesterov": False}
    sgd = optim.SGD(weights(), lr=0.1)
    assert sgd.param_groups[0]["momentum"] == 0 and sgd.param_groups[0]["dampening"] == 0
    adam = optim.Adam(weights())
    assert adam.param_groups[0]["lr"] == 1e-3 and adam.param_groups[0]["betas"] == (0.9, 0.999)


@pytest.mark.parametrize("make", [lambda w: optim.SGD(w, lr=0.1, momentum=0.9),
                                  lambda w: optim.Adam(w, lr=0.1),
                                  lambda w: optim.LAMB(w, lr=0.1)])
def test_a_host_step_is_the_update_of_the_devices_gradients(make):
    stepped, applied = weights(), weights()
    gradient = torch.linspace(0.5, -0.5, 6).reshape(2, 3)
    stepped[0].grad = gradient.clone()
    make(stepped).step()
    make(applied)._apply_gradients({applied[0]: gradient}, scale=1.0)
    assert torch.equal(stepped[0], applied[0])


def test_max_grad_norm_is_held_where_poptorch_holds_it():
    # PopTorch's SGD, Adam and AdamW take max_grad_norm; its RMSprop and LAMB do not
    assert optim.SGD(weights(), lr=0.1, max_grad_norm=2.0).max_grad_norm == 2.0
    assert optim.AdamW(weights()).max_grad_norm == float("inf")
    for kind in (optim.RMSprop, optim.LAMB):
        optimizer = kind(weights())
        assert not hasattr(optimizer, "max_grad_norm") and optimizer._max_grad_norm == float("inf")
    with pytest.raises(TypeError, match="max_grad_norm"):
        optim.LAMB(weights(), max_grad_norm=1.0)


def test_state_is_kept_in_the_type_its_argument_declares():
    w = weights()
    adam = optim.Adam(w, first_order_momentum_accum_type=torch.float16)
    adam._apply_gradients({w[0]: torch.ones(2, 3)}, scale=1.0)
    state = adam.state[w[0]]
    assert (state["exp_avg"].dtype, state["exp_avg_sq"].dtype) == (torch.float16, torch.float32)
    assert adam._state_bytes == 4 and adam._state_per_param == 2  # what the memory plan counts


def test_only_adamw_keeps_a_bias_correction_as_poptorch_does():
    assert optim.AdamW(weights(), bias_correction=False).bias_correction is False
    assert not hasattr(optim.Adam(weights()), "bias_correction")
    with pytest.raises(TypeError, match="bias_correction"):
        optim.Adam(weights(), bias_correction=False)
