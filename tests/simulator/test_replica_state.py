"""Each replica's own buffers, and PopTorch's rule against in-place buffer updates while
buffers are broadcast."""
import pytest
import torch

from ipu_tutorials.errors import Error
from ipu_tutorials.simulator.replica_state import ReplicaState


class Counter(torch.nn.Module):
    """Counts its forward passes in a buffer, in place."""

    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros(1))

    def forward(self):
        self.count += 1
        return self.count.clone()


def test_broadcast_buffers_refuse_an_in_place_update_and_leave_the_model_as_it_was():
    model = Counter()
    state = ReplicaState(model, replicas=2, broadcast=True)
    with pytest.raises(Error, match=r"broadcastBuffers\(False\). \(The model updated count in "
                                    r"place while replicationFactor is 2.\)"):
        state.forward(0, model)
    assert model.count.item() == 0


def test_without_broadcast_each_replica_counts_on_its_own_buffers():
    model = Counter()
    state = ReplicaState(model, replicas=3, broadcast=False)
    counts = [state.forward(r, model).item() for r in (0, 1, 1, 2, 0, 0)]
    assert counts == [1, 1, 2, 1, 2, 3]
    assert model.count.item() == 3  # the host sees replica 0's copy
    model.count.fill_(10)
    state.reset()  # uploading the weights broadcasts the module's buffers again
    assert state.forward(2, model).item() == 11


def test_one_replica_needs_no_rule():
    model = Counter()
    state = ReplicaState(model, replicas=1, broadcast=True)
    assert [state.forward(0, model).item() for _ in range(2)] == [1, 2]


def test_an_upload_of_named_buffers_reaches_every_replica():
    model = Counter()
    state = ReplicaState(model, replicas=3, broadcast=False)
    model.count.fill_(7.0)
    state.upload(["count"])
    assert [own["count"].item() for own in state.copies] == [7.0, 7.0]
    assert state.copies[0]["count"] is not state.copies[1]["count"]


class FunctionalNorm(torch.nn.Module):
    """Batch norm called as a function on buffers of its own (not an nn.BatchNorm module)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.zeros(2))
        self.register_buffer("var", torch.ones(2))

    def forward(self, x):
        return torch.nn.functional.batch_norm(x, self.mean, self.var, training=True,
                                              momentum=1.0)


@pytest.mark.parametrize("model", [torch.nn.BatchNorm1d(2, momentum=1.0), FunctionalNorm()],
                         ids=["module", "functional"])
def test_running_statistics_need_no_broadcast_and_stay_each_replicas_own(model):
    # PopTorch's in-place check never sees them: PopART's BatchNormalization updates them
    state = ReplicaState(model, replicas=2, broadcast=True)
    first, second = torch.tensor([[0.0, 4.0], [2.0, 8.0]]), torch.tensor([[10.0, 0.0], [20.0, 0.0]])
    state.forward(0, lambda: model(first))
    state.forward(1, lambda: model(second))
    buffers = dict(model.named_buffers())
    mean, var = (n for n in buffers if "mean" in n or "var" in n)
    assert buffers[mean].tolist() == [1.0, 6.0]  # momentum 1: the last batch's statistics
    assert state.copies[0][mean].tolist() == [15.0, 0.0]
    assert state.copies[0][var].tolist() == [50.0, 0.0]  # unbiased, as torch keeps it
    assert state.own == {mean, var} | ({"num_batches_tracked"} & set(buffers))


def test_in_evaluation_the_statistics_are_only_read():
    model = torch.nn.BatchNorm1d(2).eval()
    state = ReplicaState(model, replicas=2, broadcast=True)
    state.forward(0, lambda: model(torch.ones(2, 2)))
    assert state.own == set() and state.copies == [{}]


def test_a_counter_integer_buffer_is_not_refused_and_counts_per_replica():
    class Steps(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("steps", torch.zeros((), dtype=torch.int64))

        def forward(self):
            self.steps += 1
            return self.steps.clone()

    model = Steps()
    state = ReplicaState(model, replicas=3, broadcast=True)
    assert [state.forward(r, model).item() for r in (0, 1, 2, 0, 1, 2)] == [1, 1, 1, 2, 2, 2]
