"""The loss scale's way: taken from the optimizer when the model is wrapped (or at
setOptimizer), carried in the spec, read from there; the user's optimizer is only read."""
import pytest
import torch

from ipu_tutorials import poptorch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)

    def forward(self, x):
        return poptorch.identity_loss(self.lin(x).pow(2), reduction="sum")


class RecordingGroup(dict):
    """A param group that notes every write to it."""

    def __init__(self, group, writes):
        super().__init__(group)
        self.writes = writes

    def __setitem__(self, key, value):
        self.writes.append(f"group[{key!r}]")
        super().__setitem__(key, value)

    def update(self, *args, **kwargs):
        self.writes.append("group.update")
        super().update(*args, **kwargs)


def spy_on(optimizer, monkeypatch) -> list:
    """The names written to or deleted from this optimizer (or its groups) from now on."""
    writes = []
    optimizer.param_groups = [RecordingGroup(g, writes) for g in optimizer.param_groups]
    cls = type(optimizer)

    def setattr_spy(self, name, value):
        if self is optimizer:
            writes.append(name)
        object.__setattr__(self, name, value)

    def delattr_spy(self, name):
        if self is optimizer:
            writes.append(f"del {name}")
        object.__delattr__(self, name)

    monkeypatch.setattr(cls, "__setattr__", setattr_spy, raising=False)
    monkeypatch.setattr(cls, "__delattr__", delattr_spy, raising=False)
    return writes


OPTIMIZERS = {
    "poptorch.optim.SGD": lambda p: poptorch.optim.SGD(p, lr=0.05, momentum=0.9,
                                                        loss_scaling=1024.0),
    "poptorch.optim.Adam": lambda p: poptorch.optim.Adam(p, lr=0.01, loss_scaling=64.0),
    "torch.optim.SGD": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9),
}
SCALES = {"poptorch.optim.SGD": 1024.0, "poptorch.optim.Adam": 64.0, "torch.optim.SGD": 1.0}
TWINS = {"poptorch.optim.SGD": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9),
         "poptorch.optim.Adam": lambda p: torch.optim.Adam(p, lr=0.01),
         "torch.optim.SGD": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9)}


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_a_training_step_reads_the_users_optimizer_and_writes_nothing_to_it(name, monkeypatch):
    torch.manual_seed(0)
    model = Model()
    optimizer = OPTIMIZERS[name](model.parameters())
    training = poptorch.trainingModel(model, poptorch.Options(), optimizer)
    x = torch.randn(2, 4)
    training(x)  # compile and a first step
    before = {k: v for k, v in vars(optimizer).items() if k != "param_groups"}
    groups = [dict(g) for g in optimizer.param_groups]
    writes = spy_on(optimizer, monkeypatch)
    training(x)
    training(x)
    # PopTorch itself marks the host's copy of the state stale after each run
    # (graphcore/poptorch@sdk/poptorch/3.4.0 python/_poplar_executor.py, _executeInternal)
    assert [w for w in writes if w != "host_state_is_dirty"] == []
    assert {k: v for k, v in vars(optimizer).items() if k != "param_groups"} == before
    assert [dict(g) for g in optimizer.param_groups] == groups


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_the_loss_scale_given_reaches_the_gradients_and_is_undone(name):
    torch.manual_seed(0)
    model, reference = Model(), Model()
    reference.load_state_dict(model.state_dict())
    seen = []
    model.lin.weight.register_hook(lambda g: seen.append(g.clone()))
    training = poptorch.trainingModel(model, poptorch.Options(),
                                      OPTIMIZERS[name](model.parameters()))
    twin = TWINS[name](reference.parameters())
    for _ in range(3):
        x = torch.randn(2, 4)
        training(x)
        twin.zero_grad()
        reference(x).backward()
        expected = reference.lin.weight.grad * SCALES[name]
        torch.testing.assert_close(seen[-1], expected, rtol=1e-5, atol=1e-5 * SCALES[name])
        twin.step()
    for mine, theirs in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(mine, theirs, rtol=1e-5, atol=1e-5)


def test_a_variable_loss_scale_changes_through_set_optimizer_and_not_before(monkeypatch):
    torch.manual_seed(0)
    model = Model()
    seen = []
    model.lin.bias.register_hook(lambda g: seen.append(g.clone()))
    optimizer = poptorch.optim.SGD(model.parameters(), lr=0.0, loss_scaling=4.0)
    training = poptorch.trainingModel(model, poptorch.Options(), optimizer)
    x = torch.randn(2, 4)
    training(x)
    unscaled = seen[-1] / 4.0
    optimizer.loss_scaling = 32.0  # passed to the constructor: variable, as PopTorch has it
    with pytest.warns(UserWarning, match=r"setOptimizer"):
        training(x)  # not picked up without setOptimizer, as on the hardware
    torch.testing.assert_close(seen[-1], unscaled * 4.0)
    training.setOptimizer(optimizer)
    writes = spy_on(optimizer, monkeypatch)
    training(x)
    torch.testing.assert_close(seen[-1], unscaled * 32.0)
    assert optimizer.loss_scaling == 32.0
    assert [w for w in writes if w != "host_state_is_dirty"] == []


def test_automatic_loss_scaling_moves_the_devices_scale_not_the_users(monkeypatch):
    torch.manual_seed(0)
    model = Model().half()
    seen = []
    model.lin.bias.register_hook(lambda g: seen.append(g.clone()))
    optimizer = poptorch.optim.SGD(model.parameters(), lr=0.0, loss_scaling=2.0)
    opts = poptorch.Options()
    opts.Training.setAutomaticLossScaling(True)
    opts.anchorTensor("ls", "finalLossScale")
    training = poptorch.trainingModel(model, opts, optimizer)
    x = torch.ones(2, 4).half()
    training(x)
    writes = spy_on(optimizer, monkeypatch)
    for expected in (4.0, 8.0):
        training(x)
        assert training.getAnchoredTensor("ls").item() == expected
        torch.testing.assert_close(seen[-1], seen[0] * (expected / 2.0))
    assert optimizer.loss_scaling == 2.0
    assert [w for w in writes if w != "host_state_is_dirty"] == []
