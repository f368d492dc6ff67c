"""Where sharded optimizer state lives, as pure functions: ZeroRedundancyOptimizer's whole
tensors per rank, replicated tensor sharding's split of every tensor large enough, and the even
split of every tensor (FSDP2's dim-0 sharding, up to rounding)."""
from __future__ import annotations

import torch.nn as nn

ADAMW_BYTES = 2 * 4  # two float32 moments per parameter element
# PopART's default minElementsForReplicatedTensorSharding: a tensor with fewer elements is not
# sharded (graphcore/popart sdk/poplar/3.4.0: willow/include/popart/sessionoptions.hpp,
# TensorLocationSettings; willow/src/transforms/streamingmemoryopinserter.cpp,
# tooSmallForReplicatedTensorSharding). The simulator's own default is 0 (docs/differences.md).
RTS_MIN_ELEMENTS = 8192


def zero_partition(sizes: dict[str, int], ranks: int) -> list[list[str]]:
    """Which parameters' state each rank holds under ZeroRedundancyOptimizer: the parameters,
    largest first, each go whole to the rank with the fewest elements so far (torch 2.14's
    `_partition_parameters`; ties go to the lowest rank)."""
    held: list[list[str]] = [[] for _ in range(ranks)]
    totals = [0] * ranks
    for name, size in sorted(sizes.items(), key=lambda item: item[1], reverse=True):
        rank = totals.index(min(totals))
        held[rank].append(name)
        totals[rank] += size
    return held


def parameter_sizes(module: nn.Module) -> dict[str, int]:
    """Each parameter's element count, by name, in the module's order."""
    return {name: p.numel() for name, p in module.named_parameters()}


def zero_state_bytes(module: nn.Module, ranks: int) -> list[int]:
    """AdamW's state bytes on each rank under ZeroRedundancyOptimizer."""
    sizes = parameter_sizes(module)
    return [ADAMW_BYTES * sum(sizes[name] for name in names)
            for names in zero_partition(sizes, ranks)]


def even_state_bytes(module: nn.Module, ranks: int) -> int:
    """AdamW's state bytes per rank when every tensor's state is split evenly over the ranks
    (what fully_shard does, up to its rounding of rows)."""
    return sum(ADAMW_BYTES * size // ranks for size in parameter_sizes(module).values())


def rts_state_bytes(module: nn.Module, replicas: int,
                    min_elements: int = RTS_MIN_ELEMENTS) -> int:
    """AdamW's state bytes per replica under replicated tensor sharding: each tensor of at least
    `min_elements` elements split over the replicas, each smaller one kept whole on every one."""
    return sum(ADAMW_BYTES * size // (replicas if size >= min_elements else 1)
               for size in parameter_sizes(module).values())
