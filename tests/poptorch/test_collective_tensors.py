"""_collective_tensors.py: a collective's tensors are held until no other thread holds them."""
import threading
import time

import pytest
import torch

from ipu_tutorials.poptorch import _collective_tensors


def hold_then_drop(tensor: torch.Tensor, seconds: float) -> threading.Thread:
    """A thread that holds a reference to `tensor` (a view) and drops it after `seconds`, as
    gloo's worker thread does a moment after a collective completes."""
    held = [tensor[:]]

    def drop():
        time.sleep(seconds)
        held.clear()

    thread = threading.Thread(target=drop)
    thread.start()
    return thread


def test_the_block_ends_only_when_the_other_thread_has_let_go():
    tensor = torch.zeros(4)
    with _collective_tensors.held_until_released([tensor]):
        thread = hold_then_drop(tensor, 0.2)
    assert tensor._use_count() == 1  # no reference but the Python object's own
    thread.join()


def test_references_held_before_the_block_are_not_waited_for(monkeypatch):
    tensor = torch.zeros(4)
    view = tensor[:]  # held by this test throughout
    slept = []
    monkeypatch.setattr(_collective_tensors.time, "sleep", slept.append)
    with _collective_tensors.held_until_released([tensor]):
        pass
    assert slept == [] and view._base is tensor


def test_after_an_error_nothing_is_waited_for(monkeypatch):
    tensor = torch.zeros(4)
    kept = []
    slept = []
    monkeypatch.setattr(_collective_tensors.time, "sleep", slept.append)
    with pytest.raises(RuntimeError, match="the collective failed"):
        with _collective_tensors.held_until_released([tensor]):
            kept.append(tensor[:])  # as a collective that never finished holds its tensors
            raise RuntimeError("the collective failed")
    assert slept == []


def test_a_reference_never_dropped_is_waited_for_a_bounded_time(monkeypatch):
    monkeypatch.setattr(_collective_tensors, "RELEASE_SECONDS", 0.05)
    tensor = torch.zeros(4)
    kept = []
    with _collective_tensors.held_until_released([tensor]):
        kept.append(tensor[:])
    assert tensor._use_count() == 2  # still held: the wait gave up instead of hanging
