"""poptorch.DataLoader between instances (PopTorch's rule) and the Pod-wide simulated plan."""
import pytest
import torch

from ipu_tutorials import poptorch, tutorial
from ipu_tutorials.support import environment
from ipu_tutorials.poptorch import _to_simulator
from ipu_tutorials.tutorial.models import Network, TrainingModelWithLoss


def loader(process: int, processes: int, samples: int = 100, **kwargs):
    opts = poptorch.Options().randomSeed(7)
    opts.Distributed.configureProcessId(process, processes)
    dataset = torch.utils.data.TensorDataset(torch.arange(samples))
    return poptorch.DataLoader(opts, dataset, batch_size=4, **kwargs)


def epoch(data) -> list[int]:
    return [i for (batch,) in data for i in batch.tolist()]


def test_each_instance_takes_a_contiguous_share_of_whole_calls():
    shares = [epoch(loader(p, 3)) for p in range(3)]
    assert shares == [list(range(0, 32)), list(range(32, 64)), list(range(64, 96))]


def test_shuffling_permutes_the_whole_dataset_the_same_way_everywhere():
    loaders = [loader(p, 2, shuffle=True) for p in range(2)]
    first = [epoch(d) for d in loaders]
    second = [epoch(d) for d in loaders]
    assert not set(first[0]) & set(first[1]) and len(first[0]) == len(first[1]) == 48
    order = torch.randperm(100, generator=torch.Generator().manual_seed(7)).tolist()
    assert first[0] + first[1] == order[:96]
    assert second[0] != first[0]  # a new permutation each epoch
    leftovers = torch.Generator().manual_seed(7)
    torch.randperm(100, generator=leftovers)
    assert second[0] == torch.randperm(100, generator=leftovers).tolist()[4:52]


def test_shuffling_instances_need_a_seed():
    opts = poptorch.Options()
    opts.Distributed.configureProcessId(0, 2)
    with pytest.raises(AssertionError, match="needs options.randomSeed"):  # PopTorch asserts
        poptorch.DataLoader(opts, torch.utils.data.TensorDataset(torch.arange(8)), shuffle=True)


def test_without_drop_last_the_samples_are_split_evenly():
    with pytest.warns(UserWarning, match="not a multiple"):
        sizes = [len(loader(p, 3, samples=10, drop_last=False).dataset) for p in range(3)]
    assert sizes == [4, 3, 3]


def test_the_simulated_pod_holds_the_replicas_of_every_instance():
    opts = poptorch.Options().replicationFactor(2)
    opts.Distributed.configureProcessId(1, 2)
    spec = _to_simulator.options_spec(opts, True, None, environment.read(), micro_batch=4)
    assert spec.pod_replicas == 4  # the timeline's all-reduce and the IPU count see all four
    assert spec.replication_factor == 2  # this process computes its two
    assert spec.micro_batches_per_input == 2  # and reads only their inputs


def test_compiling_as_one_of_several_processes_needs_a_meeting_point(mnist_like, monkeypatch):
    monkeypatch.delenv("MASTER_ADDR", raising=False)
    opts = poptorch.Options().setExecutionStrategy(tutorial.strategy("sharded"))
    opts.Distributed.configureProcessId(0, 2)
    model = poptorch.trainingModel(TrainingModelWithLoss(Network()), opts)
    with pytest.raises(poptorch.Error, match="instance 0 of 2 needs to know where the others "
                                             "meet: launch with poprun"):
        model.compile(*mnist_like)
