"""The asynchronous loader's background pass over the data, and the rebatching of its batches."""
from __future__ import annotations

import atexit
import queue
import sys
import threading
import weakref

import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

from ..errors import Error

POLL_SECONDS = 0.05  # how often a waiting thread looks whether it has been told to stop


def rebatched(batches, size: int, drop_last: bool):
    """Batches of exactly `size` samples from batches of any size (tensors, tuples, dicts of them).

    A worker's short last batch is joined with the next ones, so only the end of the whole
    pass can be short: dropped with drop_last, else yielded as it is (PopTorch's
    AsyncRebatched)."""
    pending, spec, count = [], None, 0
    for batch in batches:
        leaves, spec = tree_flatten(batch)
        pending.append(leaves)
        count += len(leaves[0])
        while count >= size:
            joined = _cat(pending)
            yield tree_unflatten([leaf[:size] for leaf in joined], spec)
            count -= size
            pending = [[leaf[size:] for leaf in joined]] if count else []
    if count and not drop_last:
        yield tree_unflatten(_cat(pending), spec)


def grouped(batches, count: int, drop_last: bool):
    """Every `count` consecutive batches joined into one: a call's worth of a batch_sampler's
    batches (PopTorch's rule); a short last group is kept unless drop_last."""
    group = []
    for batch in batches:
        group.append(batch)
        if len(group) == count:
            yield _joined(group)
            group = []
    if group and not drop_last:
        yield _joined(group)


def _joined(batches: list):
    flat = [tree_flatten(batch) for batch in batches]
    return tree_unflatten(_cat([leaves for leaves, _ in flat]), flat[0][1])


def _cat(batches_leaves: list[list]) -> list:
    """Several batches' leaves (each a list, in one tree order) joined leaf by leaf."""
    return [torch.cat(parts) for parts in zip(*batches_leaves)]


class _Failure:
    """What the loader thread raised, carried to the consumer (not a batch, whatever it is)."""

    def __init__(self, error: BaseException):
        self.error = error

    def raise_here(self):
        if isinstance(self.error, Exception):
            raise self.error
        # SystemExit or KeyboardInterrupt raised by the dataset: stop the loop with an error
        # that says so, rather than exiting from inside a background thread
        raise Error(f"the dataset raised {type(self.error).__name__}"
                    f"({', '.join(map(repr, self.error.args))}) while the asynchronous data "
                    f"loader read a batch") from self.error


def _put(buffer: queue.Queue, item, stop: threading.Event) -> bool:
    """Wait for room in the buffer; False if the consumer went away first."""
    while not stop.is_set():
        try:
            buffer.put(item, timeout=POLL_SECONDS)
            return True
        except queue.Full:
            continue
    return False


def _wait(event: threading.Event, stop: threading.Event) -> bool:
    """Wait for `event`; False if told to stop first."""
    while not event.wait(POLL_SECONDS):
        if stop.is_set():
            return False
    return True


_RUNNING: "weakref.WeakSet[Worker]" = weakref.WeakSet()


@atexit.register
def _stop_at_exit() -> None:
    """A daemon thread still inside torch when the interpreter shuts down aborts the whole
    process ('terminate called without an active exception'): stop every loader thread first."""
    for worker in list(_RUNNING):
        worker.terminate()


class Worker:
    """One pass over the data, `buffer_size` batches ahead of the consumer.

    The first batch is read at once, in the caller's thread: a broken dataset fails where the
    loader is made (as PopTorch's worker process does), and the random draws that start an
    epoch (torch's sampler seed) happen in the caller's order, so runs stay deterministic. A
    daemon thread reads the rest once iteration begins, or at once with early_preload. The
    thread holds the batches, never the accessor, so dropping the accessor stops it (its
    __del__ sets `stop`)."""

    def __init__(self, make_batches, buffer_size: int, early_preload: bool):
        self.buffer: queue.Queue = queue.Queue(maxsize=buffer_size)
        self.buffer_size = buffer_size
        self.stop, self.go = threading.Event(), threading.Event()
        if early_preload:
            self.go.set()
        self.start_failure: list[Exception] = []
        first, batches = self._read_first(make_batches)
        self.thread = threading.Thread(target=self._fill, args=(first, batches), daemon=True)
        self.thread.start()
        _RUNNING.add(self)

    @property
    def filled(self) -> int:
        """Batches loaded and waiting for the consumer."""
        return self.buffer.qsize()

    @property
    def indices_mem(self) -> list[int]:
        """One flag per buffer slot: 1 when it holds a batch the consumer has not taken yet."""
        return [1] * self.filled + [0] * (self.buffer_size - self.filled)

    @property
    def _data_buffers(self) -> "Worker":
        # PopTorch's name for its worker's ring buffer, whose fill flags (indices_mem) its own
        # tests read; here the worker is its own buffer
        return self

    def _read_first(self, make_batches):
        """(first batch or the end marker, the batches after it); a failure is kept for
        check_started, without its traceback, whose frames hold the data's iterator: that
        iterator (and torch's worker processes) must go now, not at exit."""
        try:
            batches = iter(make_batches())
            return next(batches, StopIteration()), batches
        except Exception as error:  # pylint: disable=broad-except  (raised by check_started)
            self.start_failure.append(error.with_traceback(None))
            return None, iter(())

    def _fill(self, first, batches):
        if self.start_failure or not _put(self.buffer, first, self.stop):
            return
        if isinstance(first, StopIteration) or not _wait(self.go, self.stop):
            return
        try:
            for item in batches:
                if not _put(self.buffer, item, self.stop):
                    return
        except BaseException as error:  # handed to the consumer, raised there (SystemExit too)
            _put(self.buffer, _Failure(error), self.stop)
            return
        _put(self.buffer, StopIteration(), self.stop)

    def check_started(self) -> None:
        """If reading the first batch failed, say why on stderr (where PopTorch's worker
        process prints it; torch's message from a worker process holds the worker's
        traceback) and raise one clear line."""
        if self.start_failure:
            error = self.start_failure[0]
            print(f"AsynchronousDataAccessor: reading the first batch raised "
                  f"{type(error).__name__}: {error}", file=sys.stderr, flush=True)
            raise Error(f"the AsynchronousDataAccessor worker thread failed to start: reading "
                        f"the first batch raised {type(error).__name__} (shown above); fix the "
                        f"dataset, e.g. by iterating it once without the accessor") from error

    def batches(self):
        """The pass's batches in order, then its end; stops the thread when the consumer leaves."""
        self.go.set()
        try:
            while True:
                item = self._next()
                if isinstance(item, StopIteration):
                    return
                if isinstance(item, _Failure):
                    item.raise_here()
                yield item
        finally:
            self.stop.set()  # the consumer stopped early (break) or finished: release the loader

    def _next(self):
        """The next item; if the loader thread died without a word, say so instead of waiting."""
        while True:
            try:
                return self.buffer.get(timeout=POLL_SECONDS * 2)
            except queue.Empty:
                if self.stop.is_set() and self.buffer.empty():
                    raise Error("the asynchronous data loader was terminated or dropped "
                                "before the epoch ended")
                if not self.thread.is_alive() and self.buffer.empty():
                    raise Error("the asynchronous data loader's thread stopped without "
                                "finishing the epoch or raising; the dataset ended it abruptly")

    def terminate(self) -> None:
        self.stop.set()
        # bounded: a dataset stuck inside one item must not hold up Ctrl-C or exit (the
        # thread is a daemon and stops at its next item)
        self.thread.join(timeout=5.0)
