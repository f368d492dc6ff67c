"""Data-dependent Python control flow is frozen at trace time, as in PopTorch's static graph."""
import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.simulator.frozen_values import Recording, Replaying


class Gate(torch.nn.Module):
    """Takes a branch on the sign of its input's sum."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        if x.sum() > 0:
            return self.fc(x)
        return -x


class Clipped(torch.nn.Module):
    """Scales by a number read from the tensor with .item(), and returns a loss."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x, y):
        out = self.fc(x)
        out = out / out.abs().max().item()
        return out, torch.nn.functional.mse_loss(out, y)


POSITIVE, NEGATIVE = torch.ones(2, 4), -torch.ones(2, 4)


def test_the_branch_taken_by_the_first_inputs_is_frozen():
    torch.manual_seed(0)
    model = Gate()
    with pytest.warns(UserWarning, match=r"`if x.sum\(\) > 0:` \(line \d+, in forward\) read True"):
        ipu = poptorch.inferenceModel(model)
        ipu(POSITIVE)
    # the second call's inputs would take the other branch in PyTorch; the graph keeps fc
    torch.testing.assert_close(ipu(NEGATIVE), model.fc(NEGATIVE), atol=1e-5, rtol=1e-5)
    assert torch.equal(model(NEGATIVE), -NEGATIVE)  # plain PyTorch is not frozen


def test_an_item_value_is_frozen_in_training_and_the_weights_follow_it():
    torch.manual_seed(0)
    model = Clipped()
    reference = Clipped()
    reference.load_state_dict(model.state_dict())
    ipu = poptorch.trainingModel(model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1))
    with pytest.warns(UserWarning, match="frozen to these values"):
        ipu(POSITIVE, POSITIVE)
    frozen = ipu._graph.value_reads[0].value
    ipu(NEGATIVE * 3, POSITIVE)
    # plain PyTorch with the scale of the first call, for both updates
    optimizer = torch.optim.SGD(reference.parameters(), lr=0.1)
    for x in (POSITIVE, NEGATIVE * 3):
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(reference.fc(x) / frozen, POSITIVE).backward()
        optimizer.step()
    for p, q in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p, q, atol=1e-5, rtol=1e-5)


def test_a_model_that_reads_no_values_is_traced_on_meta_and_not_warned_about(recwarn):
    ipu = poptorch.inferenceModel(torch.nn.Linear(4, 4))
    ipu(POSITIVE)
    assert ipu._graph.value_reads == ()
    assert not [w for w in recwarn if "reads tensor values" in str(w.message)]


def test_replaying_refuses_reads_in_another_order():
    with Recording() as recording:
        bool(torch.tensor(1.0) > 0)
    with Replaying(tuple(recording.reads)):
        with pytest.raises(poptorch.Error, match="in another order than when it was traced"):
            torch.tensor(2.0).item()
