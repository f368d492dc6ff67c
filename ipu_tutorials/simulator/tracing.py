"""What the model's annotations see while it runs: the current block, the capture, the IPU flag.

Annotations (Block, BeginBlock, identity_loss, ...) call into this module. Outside a capture
they cost one attribute test, so the numerics run at plain PyTorch speed.
"""
from __future__ import annotations

import contextlib
import dataclasses


@dataclasses.dataclass
class BlockId:
    user_id: str
    ipu_id: int | None


class TracingState:
    """Owns the one piece of global tracing state: what the model's annotations see right now."""

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        """Back to outside any capture, block or wrapped forward (e.g. after an interrupted run)."""
        self.capture = None  # the active capture.Recorder, if any
        self.on_ipu = False  # inside a wrapped model's forward (isRunningOnIpu)
        self.block: BlockId | None = None
        self.next_auto_id = 0
        self.losses: list | None = None  # a run's computed losses, when forward does not return it


STATE = TracingState()


def enter_block(user_id: str | None, ipu_id: int | None) -> BlockId | None:
    """Make a block current; returns the block it replaced (for Block.__exit__)."""
    previous = STATE.block
    if user_id is None:
        user_id = str(STATE.next_auto_id)
        STATE.next_auto_id += 1
    STATE.block = BlockId(user_id, ipu_id)
    STATE.capture.note_block(STATE.block)
    return previous


def restore_block(previous: BlockId | None) -> None:
    STATE.block = previous


def mark_loss(tensor) -> None:
    """A loss function or identity_loss produced `tensor`: tell the capture, or the run that
    collects the losses of a forward that does not return its loss (losses.LossLocator)."""
    if STATE.capture is not None:
        STATE.capture.mark_loss(tensor)
    elif STATE.losses is not None:
        STATE.losses.append(tensor)


@contextlib.contextmanager
def collecting_losses():
    """Collect the losses one forward pass computes, in order."""
    saved, STATE.losses = STATE.losses, []
    try:
        yield STATE.losses
    finally:
        STATE.losses = saved


@contextlib.contextmanager
def running_on_ipu():
    """Mark a wrapped model's forward pass: isRunningOnIpu() is True inside."""
    STATE.on_ipu = True
    try:
        yield
    finally:
        STATE.on_ipu = False


@contextlib.contextmanager
def capturing(recorder):
    """Route annotations to a recorder for one forward pass, starting outside any block."""
    saved = (STATE.capture, STATE.block, STATE.next_auto_id)
    STATE.capture, STATE.block, STATE.next_auto_id = recorder, None, 0
    try:
        with running_on_ipu():
            yield recorder
    finally:
        STATE.capture, STATE.block, STATE.next_auto_id = saved
