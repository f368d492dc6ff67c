"""one_thread(): one torch thread inside the block, the previous count after it."""
import pytest
import torch

from ipu_tutorials.support.threads import one_thread


@pytest.fixture
def two_threads():
    """Two threads before the block (an xdist worker may run on one), so that restoring the
    count is seen."""
    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(previous)


def test_one_thread_inside_and_the_count_restored_after(two_threads):
    with one_thread():
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2


def test_the_count_is_restored_when_the_block_raises(two_threads):
    with pytest.raises(ZeroDivisionError), one_thread():
        1 / 0
    assert torch.get_num_threads() == 2
