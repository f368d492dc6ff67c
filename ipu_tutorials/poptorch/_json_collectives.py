"""Collectives that exchange JSON as bytes in tensors: instances never unpickle each other's data.

torch.distributed's *_object collectives pickle, so a peer (or anyone who can reach the
run's sockets) could make every instance run code; these send UTF-8 JSON in uint8 tensors
and parse it with json.loads, which only ever builds data.
"""
from __future__ import annotations

import json

import torch
import torch.distributed as dist

from ._collective_tensors import held_until_released

MAX_BYTES = 16 * 2**20  # a fingerprint is a few kB; refuse a peer that claims more


def all_gather_json(value) -> list:
    """Every instance's `value` (JSON-able), in rank order; tuples come back as lists.

    Raises:
        ValueError: a peer sent more than MAX_BYTES or bytes that are not JSON.
    """
    payload = torch.frombuffer(bytearray(json.dumps(value).encode()), dtype=torch.uint8)
    size = torch.tensor([payload.numel()], dtype=torch.int64)
    sizes = [torch.zeros(1, dtype=torch.int64) for _ in range(dist.get_world_size())]
    with held_until_released([size, *sizes]):
        dist.all_gather(sizes, size)
    longest = max(int(s) for s in sizes)
    if longest > MAX_BYTES:
        raise ValueError(f"an instance sent {longest} bytes of JSON (at most {MAX_BYTES}); "
                         f"refused")
    padded = torch.zeros(longest, dtype=torch.uint8)
    padded[:payload.numel()] = payload
    gathered = [torch.zeros(longest, dtype=torch.uint8) for _ in sizes]
    with held_until_released([padded, *gathered]):
        dist.all_gather(gathered, padded)
    try:
        return [json.loads(g[:int(s)].numpy().tobytes()) for g, s in zip(gathered, sizes)]
    except (ValueError, RecursionError) as error:
        raise ValueError(f"an instance sent bytes that are not JSON ({error}); refused") from None
