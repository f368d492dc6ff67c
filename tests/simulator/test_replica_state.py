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
