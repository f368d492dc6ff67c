"""ZeroRedundancyOptimizer's partition and the even split of replicated tensor sharding."""
from ipu_tutorials.tutorial.models import Network
from ipu_tutorials.tutorial.torch_engines.partition import (even_state_bytes, parameter_sizes,
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
