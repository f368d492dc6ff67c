"""ZeroRedundancyOptimizer's partition, replicated tensor sharding's and the even split."""
import torch.nn as nn

from ipu_tutorials import poptorch, tutorial
from ipu_tutorials.classroom.plans import tutorial_plan
from ipu_tutorials.tutorial.models import Network
from ipu_tutorials.torch_engines.partition import (RTS_MIN_ELEMENTS, even_state_bytes,
                                                            parameter_sizes, rts_state_bytes,
                                                            zero_partition, zero_state_bytes)


def test_largest_first_to_the_emptiest_rank_first_rank_on_ties():
    # b (9) -> rank 0; a (5), c (3), d (3) -> rank 1 while it is emptier; e (1) -> rank 0 (9 < 11)
    sizes = {"a": 5, "b": 9, "c": 3, "d": 3, "e": 1}
    assert zero_partition(sizes, 2) == [["b", "e"], ["a", "c", "d"]]
    assert zero_partition({"a": 2, "b": 2, "c": 2}, 3) == [["a"], ["b"], ["c"]]


def test_lesson_4s_network_over_4_ranks():
    sizes = parameter_sizes(Network())
    assert zero_partition(sizes, 4)[0] == ["layer3.weight"]
    assert zero_state_bytes(Network(), 4) == [655_360, 40_000, 20_480, 4_368]
    assert sum(zero_state_bytes(Network(), 4)) == 8 * sum(sizes.values())
    assert even_state_bytes(Network(), 4) == 180_052 == 2 * sum(sizes.values())


def test_rts_splits_only_tensors_of_popart_s_minimum_size():
    # was wrong: lesson 16 said RTS splits every tensor; PopART leaves those under 8,192 whole
    assert RTS_MIN_ELEMENTS == 8192
    net = Network()
    small = sum(n for n in parameter_sizes(net).values() if n < RTS_MIN_ELEMENTS)
    assert rts_state_bytes(net, 4) == 2 * 81_920 + 8 * small == 228_688
    assert rts_state_bytes(net, 4, min_elements=0) == even_state_bytes(net, 4)
    exactly = nn.Linear(8192, 1, bias=False)  # 8,192 elements: sharded (PopART: nelms < min)
    assert rts_state_bytes(exactly, 4) == 8 * 8192 // 4


def rts_plan_bytes(min_elements=None) -> int:
    """The simulator's plan of lesson 4's network on 4 replicas, AdamW's state off chip and
    sharded: the state bytes one replica's IPU holds."""
    location = poptorch.TensorLocationSettings().useOnChipStorage(False)
    location.useReplicatedTensorSharding(True)
    if min_elements is not None:
        location.minElementsForReplicatedTensorSharding(min_elements)
    opts = poptorch.Options().replicationFactor(4)
    opts.TensorLocations.setOptimizerLocation(location)
    plan = tutorial_plan(poptorch.ShardedExecution(poptorch.Stage(*tutorial.BLOCKS).ipu(0)),
                         accumulation=1, options=opts)
    return plan.memory[0].off_chip["optimizer"]


def test_the_simulated_plan_shards_as_rts_state_bytes_says():
    assert rts_plan_bytes(RTS_MIN_ELEMENTS) == rts_state_bytes(Network(), 4)
    # the simulator's own default splits every tensor (docs/differences.md)
    assert rts_plan_bytes() == even_state_bytes(Network(), 4)
