"""The optimizer's ipu_state / ipu_param: PopART's names and values, read after compile and runs,
written back by load_state_dict before the next run."""
import copy

import pytest
import torch

from ipu_tutorials import poptorch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        return poptorch.identity_loss(self.lin(x).pow(2), reduction="sum")


def wrapped(optimizer_cls, options=None, **kwargs):
    torch.manual_seed(0)
    model = Model()
    optimizer = optimizer_cls(model.parameters(), **kwargs)
    return model, optimizer, poptorch.trainingModel(model, options, optimizer=optimizer)


X = torch.ones(1, 3)


def test_the_entries_are_none_until_compile_and_never_for_an_offline_ipu():
    _, optimizer, training = wrapped(poptorch.optim.SGD, lr=0.1)
    assert optimizer.state_dict()["ipu_state"] is None
    assert optimizer.state_dict()["ipu_param"] is None
    opts = poptorch.Options().useOfflineIpuTarget()
    _, offline, training_offline = wrapped(poptorch.optim.SGD, opts, lr=0.1)
    training_offline.compile(X)
    assert offline.state_dict()["ipu_param"] is None
    training.compile(X)
    assert optimizer.state_dict()["ipu_state"] == {}  # SGD0: no velocity


def test_sgd0_keeps_popart_compound_scalars_per_weight():
    lr, wd, ls = 0.05, 0.025, 0.75
    _, optimizer, training = wrapped(poptorch.optim.SGD, lr=lr, weight_decay=wd, loss_scaling=ls)
    training.compile(X)
    params = optimizer.state_dict()["ipu_param"]
    assert set(params) == {"scaledLearningRate0___specific___lin.weight",
                           "scaledLearningRate0___specific___lin.bias",
                           "weightDecayScaleFactor0___specific___lin.weight",
                           "weightDecayScaleFactor0___specific___lin.bias", "lossScaling_FLOAT"}
    assert params["scaledLearningRate0___specific___lin.bias"].item() == pytest.approx(lr / ls)
    assert (params["weightDecayScaleFactor0___specific___lin.weight"].item() ==
            pytest.approx(1 - lr * wd))
    assert params["lossScaling_FLOAT"].item() == ls


def test_sgd_with_momentum_has_sgd1_scalars_and_its_velocity():
    _, optimizer, training = wrapped(poptorch.optim.SGD, lr=0.1, momentum=0.9, dampening=0.1)
    training(X)
    state = optimizer.state_dict()
    assert (state["ipu_param"]["scaledMomentum1___specific___lin.weight"].item() ==
            pytest.approx(0.9))
    assert (state["ipu_param"]["scaledLearningRate1___specific___lin.bias"].item() ==
            pytest.approx(0.1))
    assert "lossScaling_FLOAT" not in state["ipu_param"]  # a compiled-in constant
    velocity = state["ipu_state"]["Accl___lin.weight"]
    assert torch.equal(velocity, optimizer.state[training.lin.weight]["momentum_buffer"])


def test_adam_state_follows_each_run_and_constants_are_not_tensors():
    _, optimizer, training = wrapped(poptorch.optim.Adam, lr=0.01, weight_decay=0.1)
    training.compile(X)
    s0 = optimizer.state_dict()
    assert set(s0["ipu_param"]) == {f"{n}___specific___lin.{w}" for n in
                                    ("learningRate", "weightDecay") for w in ("weight", "bias")}
    assert torch.equal(s0["ipu_state"]["Accl1___lin.weight"], torch.zeros(3, 3))
    assert s0["ipu_state"]["Step___lin.bias"].item() == 0
    training(X)
    s1 = optimizer.state_dict()
    assert s1["ipu_state"]["Step___lin.bias"].item() == 1
    assert torch.equal(s1["ipu_state"]["Accl2___lin.weight"],
                       optimizer.state[training.lin.weight]["exp_avg_sq"])
    assert not torch.equal(s1["ipu_state"]["Accl1___lin.weight"], torch.zeros(3, 3))


def test_rmsprop_names_its_squared_average_accl1():
    _, optimizer, training = wrapped(poptorch.optim.RMSprop, lr=0.01, alpha=0.9)
    training(X)
    state = optimizer.state_dict()
    assert torch.equal(state["ipu_state"]["Accl1___lin.weight"],
                       optimizer.state[training.lin.weight]["square_avg"])
    assert (state["ipu_param"]["adaptiveAlpha___specific___lin.weight"].item() ==
            pytest.approx(0.9))


def test_a_loaded_state_is_read_back_and_used_by_the_next_run():
    model, optimizer, training = wrapped(poptorch.optim.Adam, lr=0.0)
    training.compile(X)
    s0 = optimizer.state_dict()
    del s0["ipu_state"]["Accl1___lin.bias"]
    s0["ipu_state"]["Accl1___lin.weight"] = torch.full((3, 3), 2.0)
    s0["ipu_param"]["learningRate___specific___lin.weight"] = torch.tensor(0.5)
    optimizer.load_state_dict(s0)
    read = optimizer.state_dict()
    assert "Accl1___lin.bias" not in read["ipu_state"]  # not on the device yet
    assert read["ipu_param"]["learningRate___specific___lin.weight"].item() == 0.5
    training(X)
    grad = 2 * model.lin(X).detach()  # d(sum y^2)/dy; the weights did not move (lr 0)
    expected = 0.9 * 2.0 + 0.1 * (grad.T @ X)
    after = optimizer.state_dict()
    torch.testing.assert_close(after["ipu_state"]["Accl1___lin.weight"], expected)
    assert "Accl1___lin.bias" in after["ipu_state"]
    assert after["ipu_param"]["learningRate___specific___lin.weight"].item() == 0.5


def test_a_loaded_velocity_is_history_for_sgd():
    _, optimizer, training = wrapped(poptorch.optim.SGD, lr=0.0, momentum=0.5)
    training.compile(X)
    state = optimizer.state_dict()
    state["ipu_state"]["Accl___lin.bias"] = torch.ones(3)
    optimizer.load_state_dict(state)
    training(X)
    grad = 2 * training.lin(X).detach()[0]  # d(sum y^2)/d bias; lr 0 keeps the weights
    torch.testing.assert_close(optimizer.state_dict()["ipu_state"]["Accl___lin.bias"],
                               0.5 * torch.ones(3) + grad)


def test_a_state_dict_loaded_before_wrapping_reaches_the_device():
    model, optimizer, training = wrapped(poptorch.optim.Adam, lr=0.01)
    training(X)
    saved = copy.deepcopy(optimizer.state_dict())
    saved["state"] = {}  # as in a PopTorch checkpoint: the state lives in ipu_state only
    training.destroy()
    fresh = poptorch.optim.Adam(model.parameters(), lr=0.01)
    fresh.load_state_dict(saved)
    poptorch.trainingModel(model, optimizer=fresh).compile(X)
    for name, value in saved["ipu_state"].items():
        assert torch.equal(fresh.state_dict()["ipu_state"][name], value)


def test_only_ipu_state_dicts_load():
    weights = [torch.nn.Parameter(torch.ones(2))]
    cpu = torch.optim.Adam(weights)
    optimizer = poptorch.optim.Adam(weights)
    with pytest.raises(RuntimeError, match="Only IPU optimizer states can be loaded onto the IPU"):
        optimizer.load_state_dict(cpu.state_dict())
    with pytest.raises(RuntimeError, match="empty"):
        optimizer.load_state_dict({})


def test_switching_to_torch_optims_twin_keeps_the_last_ipu_state_on_the_old_optimizer():
    model, optimizer, training = wrapped(poptorch.optim.SGD, lr=0.1, momentum=0.9)
    training(X)
    velocity = optimizer.state_dict()["ipu_state"]["Accl___lin.weight"].clone()
    twin = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    training.setOptimizer(twin)
    training(X)
    assert "ipu_state" not in twin.state_dict()  # torch's own format
    assert torch.equal(optimizer.state_dict()["ipu_state"]["Accl___lin.weight"], velocity)


def test_a_poptorch_optimizer_given_by_set_optimizer_gets_its_ipu_state():
    model, first, training = wrapped(torch.optim.Adam, lr=0.1)
    training(X)
    later = poptorch.optim.Adam(model.parameters(), lr=0.1)
    training.setOptimizer(later)
    training(X)
    assert {"Accl1___lin.weight", "Accl2___lin.weight"} <= set(later.state_dict()["ipu_state"])


def accumulated_sgd(reload: bool) -> torch.Tensor:
    options = poptorch.Options()
    options.Training.gradientAccumulation(2)
    model, optimizer, training = wrapped(poptorch.optim.SGD, options, lr=0.1, dampening=0.5)
    training(torch.ones(2, 3))
    if reload:
        state = optimizer.state_dict()
        assert "Accl___lin.weight" in state["ipu_state"]  # PopART's SGD1 under accumulation
        optimizer.load_state_dict(state)
    training(torch.ones(2, 3))
    return model.lin.weight.detach()


def test_a_saved_accumulator_without_momentum_does_not_become_a_velocity():
    # momentum 0: dampening never applies, before or after a save and load
    torch.testing.assert_close(accumulated_sgd(reload=True), accumulated_sgd(reload=False),
                               rtol=1e-5, atol=1e-5)


def _transfers(caplog) -> list[str]:
    lines = [r.getMessage() for r in caplog.records if "optimiser state" in r.getMessage()]
    caplog.clear()
    return lines


@pytest.mark.parametrize("optimizer_cls", [poptorch.optim.SGD, torch.optim.SGD])
def test_state_transfers_are_logged_in_poptorchs_words(caplog, optimizer_cls):
    # PopTorch's optimizers_test.py (test_read_ipu_state_on_detach) reads these lines
    caplog.set_level("DEBUG", logger="poptorch")
    _, optimizer, training = wrapped(optimizer_cls, lr=0.1, momentum=0.9)
    assert isinstance(optimizer, poptorch.optim.Optimizer) == (optimizer_cls is not torch.optim.SGD)
    training(X)
    training.detachFromDevice()  # the device's state is read before it goes
    ipu = optimizer_cls is poptorch.optim.SGD
    assert _transfers(caplog) == ["Writing optimiser state tensors from IPU to host."] * ipu
    state = optimizer.state_dict()
    assert _transfers(caplog) == ["Using cached optimiser state dict"] * ipu
    optimizer.load_state_dict(state)
    training.attachToDevice()  # the host's state goes to the device it attaches to
    assert _transfers(caplog) == ["Writing optimiser state tensors from host to IPU memory."] * ipu
