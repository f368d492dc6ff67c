"""Where sharded optimizer state lives, as pure functions: ZeroRedundancyOptimizer's whole
tensors per rank, and the even split of every tensor that replicated tensor sharding (and
FSDP2's dim-0 sharding, up to rounding) makes."""
from __future__ import annotations

import torch.nn as nn

ADAMW_BYTES = 2 * 4  # two float32 moments per parameter element


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
    """AdamW's state bytes per replica when every tensor's state is split evenly over the
    replicas (replicated tensor sharding)."""
    return sum(ADAMW_BYTES * size // ranks for size in parameter_sizes(module).values())
