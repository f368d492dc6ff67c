"""The annotations' global state: blocks entered during a capture, auto ids, the IPU flag,
and everything put back afterwards."""
import pytest

from ipu_tutorials.simulator import tracing


class Recorder:
    def __init__(self):
        self.blocks = []

    def note_block(self, block):
        self.blocks.append((block.user_id, block.ipu_id))


@pytest.fixture(autouse=True)
def clean_state():
    tracing.STATE.reset()
    yield
    tracing.STATE.reset()


def test_a_capture_sees_each_block_and_numbers_unnamed_ones_from_zero():
    with tracing.capturing(Recorder()) as recorder:
        assert tracing.STATE.on_ipu
        previous = tracing.enter_block("A", 0)
        assert previous is None
        tracing.enter_block(None, 1)
        tracing.enter_block(None, None)
    assert recorder.blocks == [("A", 0), ("0", 1), ("1", None)]


def test_state_is_put_back_after_a_capture_even_when_it_fails():
    tracing.STATE.next_auto_id = 7
    with pytest.raises(RuntimeError), tracing.capturing(Recorder()):
        tracing.enter_block("A", 0)
        raise RuntimeError("interrupted")
    assert (tracing.STATE.capture, tracing.STATE.block, tracing.STATE.next_auto_id) == (None, None, 7)
    assert not tracing.STATE.on_ipu


def test_restore_block_and_reset():
    with tracing.capturing(Recorder()):
        outer = tracing.enter_block("outer", 0)
        previous = tracing.enter_block("inner", 1)
        tracing.restore_block(previous)
        assert tracing.STATE.block.user_id == "outer" and outer is None
    tracing.STATE.on_ipu = True
    tracing.STATE.reset()
    assert not tracing.STATE.on_ipu and tracing.STATE.block is None
