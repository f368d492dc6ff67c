"""The host's memory, asked before allocating: a batch that cannot fit is refused up front.

A batch size of 10**9 would otherwise allocate until the operating system kills the
process; `check_fits` compares the bytes a batch needs with what the machine has available
now (MemAvailable on Linux, free pages elsewhere) and raises one MemoryError naming both.
"""
from __future__ import annotations

import os

import torch
from torch.utils._pytree import tree_flatten


def available_bytes() -> int | None:
    """Memory the host can still hand out now, or None when the system does not say."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def sample_bytes(sample) -> int:
    """Bytes of the tensors and arrays in one sample (0 when it holds none)."""
    total = 0
    for leaf in tree_flatten(sample)[0]:
        if isinstance(leaf, torch.Tensor):
            total += leaf.numel() * leaf.element_size()
        elif hasattr(leaf, "nbytes") and isinstance(leaf.nbytes, int):  # numpy arrays
            total += leaf.nbytes
    return total


def check_fits(what: str, samples: int, bytes_per_sample: int, fix: str) -> None:
    """Raises MemoryError when `samples` x `bytes_per_sample` exceeds the available memory.

    The batch is built from the samples and then stacked (collated), so it needs twice its size.
    """
    available = available_bytes()
    needed = 2 * samples * bytes_per_sample
    if available is not None and needed > available:
        raise MemoryError(f"{what} of {samples:,} samples needs about {needed / 2**30:,.1f} GiB "
                          f"({bytes_per_sample:,} bytes each, built then stacked) but the host "
                          f"has {available / 2**30:,.1f} GiB available; {fix}")
