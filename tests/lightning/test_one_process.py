"""OneHostProcess: an IPUStrategy's ranks and collectives, whatever the replication factor."""
import torch

from ipu_tutorials.lightning import IPUStrategy


def test_replicas_are_one_process_of_rank_zero():
    strategy = IPUStrategy(parallel_devices=list(range(4)))  # devices=4: four replicas
    assert (strategy.global_rank, strategy.local_rank, strategy.world_size) == (0, 0, 1)
    assert strategy.is_global_zero
    assert strategy.distributed_sampler_kwargs == {"num_replicas": 1, "rank": 0}
    assert strategy.root_device == torch.device("cpu")


def test_the_collectives_return_their_input():
    strategy = IPUStrategy()
    value = torch.arange(3.0)
    assert strategy.reduce(value) is value
    assert strategy.all_gather(value) is value
    assert strategy.broadcast({"epoch": 2}) == {"epoch": 2}
    strategy.barrier("end")  # nothing to wait for: returns at once
