"""one_thread(): one torch thread inside the block, the previous count after it."""
import pytest
import torch

from ipu_tutorials.support.threads import one_thread


def test_one_thread_inside_and_the_count_restored_after():
    before = torch.get_num_threads()
    with one_thread():
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_the_count_is_restored_when_the_block_raises():
    before = torch.get_num_threads()
    with pytest.raises(ZeroDivisionError), one_thread():
        1 / 0
    assert torch.get_num_threads() == before
