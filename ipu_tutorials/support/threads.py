"""torch's intra-op thread count, set to one for a block of work and restored after it."""
from __future__ import annotations

import contextlib
from typing import Iterator

import torch


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Run the block on one torch thread, then put the previous count back.

    For work whose float sums must add up in one order whatever the machine's thread count
    (figures a lesson prints), and for runs of many small ops, each of which would otherwise
    fork and join torch's thread pool.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
