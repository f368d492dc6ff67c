"""Tensors handed to a gloo collective, held by Python until gloo's worker thread lets them go.

A gloo collective runs on one of the process group's worker threads. work.wait() returns as
soon as the collective completes, a moment before that thread drops its own references to the
tensors. If Python drops its references first, torch keeps each tensor's Python object alive
for the worker thread, which must then take the GIL to free it. torch 2.6 destroys a process
group (dist.destroy_process_group) holding the GIL while it joins the worker threads: a worker
still waiting for the GIL then waits for ever, and so does the process (seen in
tests/poptorch/test_json_collectives.py's teardown on a loaded machine; torch 2.14 releases the
GIL there, pytorch pull request 154976). Holding the tensors here until the worker has let go
means it never needs the GIL.
"""
from __future__ import annotations

import contextlib
import time

import torch

# How long to wait for a worker thread to drop its references: it only has to be scheduled
# once, which takes microseconds on an idle machine. Past this, go on rather than hang here.
RELEASE_SECONDS = 30.0
POLL_SECONDS = 0.001


@contextlib.contextmanager
def held_until_released(tensors: list[torch.Tensor]):
    """Run a collective on `tensors` inside this block; on leaving it normally, wait until no
    thread holds them any more than before the block (at most RELEASE_SECONDS). After an
    error the collective may never finish, so nothing is waited for."""
    before = [tensor._use_count() for tensor in tensors]
    yield
    deadline = time.monotonic() + RELEASE_SECONDS
    while _still_held(tensors, before) and time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)  # releases the GIL, in case the worker thread needs it


def _still_held(tensors: list[torch.Tensor], before: list[int]) -> bool:
    return any(tensor._use_count() > count for tensor, count in zip(tensors, before))
