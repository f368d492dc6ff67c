"""poptorch.DataLoader and AsynchronousDataAccessor: batches sized for a whole call."""
from __future__ import annotations

import queue
import threading
import warnings

import torch
from torch.utils._pytree import tree_flatten

from .. import host_memory
from ..errors import Error
from ._checks import check_int
from ._to_simulator import PREPARED_AHEAD
from .enums import DataLoaderMode
from .options import Options


def mark_batch(batch, prepared_ahead: bool):
    """Tag every tensor of a batch with how the host prepared it; returns the batch.

    True when the host prepared it while the device ran the previous call (an asynchronous
    accessor, or torch worker processes fetching ahead), False when between calls. The
    model's first call reads the tag (_to_simulator.prepared_ahead)."""
    for leaf in tree_flatten(batch)[0]:
        if isinstance(leaf, torch.Tensor):
            setattr(leaf, PREPARED_AHEAD, prepared_ahead)
    return batch


class AsynchronousDataAccessor:
    """Loads batches ahead of the model in a background thread, keeping their order.

    (PopTorch uses a separate process; a thread shows the same overlap without the start-up cost.)
    """

    def __init__(self, dataset, buffer_size: int = 3, miss_sleep_time_in_ms: float = 0.1,
                 load_indefinitely: bool = True, early_preload: bool = False,
                 sharing_strategy=None, rebatched_size: int | None = None):
        self.dataset = dataset
        self.buffer_size = check_int("AsynchronousDataAccessor(buffer_size)", buffer_size)
        self.load_indefinitely = load_indefinitely
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def __len__(self) -> int:
        return len(self.dataset)

    @staticmethod
    def _put(buffer: queue.Queue, item, stop: threading.Event) -> bool:
        """Wait for room in the buffer; False if the consumer went away first."""
        while not stop.is_set():
            try:
                buffer.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def _produce(self, buffer: queue.Queue, stop: threading.Event):
        try:
            for item in self.dataset:
                if not self._put(buffer, item, stop):
                    return
        except BaseException as error:  # handed to the consumer, raised there (SystemExit too)
            self._put(buffer, _Failure(error), stop)
            return
        self._put(buffer, StopIteration(), stop)

    def _next(self, buffer: queue.Queue, thread: threading.Thread):
        """The next item; if the loader thread died without a word, say so instead of waiting."""
        while True:
            try:
                return buffer.get(timeout=0.1)
            except queue.Empty:
                if not thread.is_alive() and buffer.empty():
                    raise Error("the asynchronous data loader's thread stopped without "
                                "finishing the epoch or raising; the dataset ended it abruptly")

    def __iter__(self):
        self.terminate()
        # One stop event per pass: closing an old iterator must not stop a newer one.
        stop = self._stop = threading.Event()
        buffer: queue.Queue = queue.Queue(maxsize=self.buffer_size)
        self._thread = threading.Thread(target=self._produce, args=(buffer, stop), daemon=True)
        self._thread.start()
        try:
            while True:
                item = self._next(buffer, self._thread)
                if isinstance(item, StopIteration):
                    return
                if isinstance(item, _Failure):
                    item.raise_here()
                yield mark_batch(item, prepared_ahead=True)
        finally:
            stop.set()  # the consumer stopped early (break) or finished: release the loader

    def terminate(self):
        """Stop the background loader (it stops by itself at the end of an epoch)."""
        if self._thread is not None:
            self._stop.set()
            # bounded: a dataset stuck inside one item must not hold up Ctrl-C or exit (the
            # thread is a daemon and stops at its next item)
            self._thread.join(timeout=5.0)
            self._thread = None

    def __del__(self):
        stop = getattr(self, "_stop", None)  # absent when __init__ refused its arguments
        if stop is not None:
            stop.set()


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


class DataLoader(torch.utils.data.DataLoader):
    """A torch DataLoader whose batches hold everything one call of the model consumes.

    Its torch batch size is combinedBatchSize = batch_size x deviceIterations x
    replicationFactor x gradientAccumulation.
    """

    def __init__(self, options: Options, dataset, batch_size: int = 1, shuffle: bool | None = None,
                 num_workers: int = 0, drop_last: bool = True, persistent_workers=None,
                 auto_distributed_partitioning: bool = True, mode=DataLoaderMode.Sync,
                 async_options: dict | None = None, rebatched_worker_size: int | None = None,
                 batch_sampler=None, **kwargs):
        if not isinstance(options, Options):
            raise TypeError(f"poptorch.DataLoader's first argument is a poptorch.Options, got "
                            f"{type(options).__name__}")
        if not isinstance(mode, DataLoaderMode):
            raise TypeError(f"mode must be a poptorch.DataLoaderMode, got {mode!r}")
        options._freeze()
        self.options = options
        self._mode = mode
        if batch_sampler is not None:
            _check_sampler_alone(batch_size, shuffle, drop_last)
            self._combined = None
            super().__init__(dataset, batch_sampler=batch_sampler, num_workers=num_workers, **kwargs)
            self._accessor = self._make_accessor(async_options)
            return
        check_int("DataLoader(batch_size)", batch_size)
        check_int("DataLoader(num_workers)", num_workers, minimum=0)
        groups = options.replication_factor // options.input_group_size
        self._combined = (batch_size * options.device_iterations * groups
                          * options.Training.gradient_accumulation)
        if rebatched_worker_size is not None and rebatched_worker_size > self._combined:
            raise ValueError(f"rebatched_worker_size ({rebatched_worker_size}) must be at most the "
                             f"combined batch size ({self._combined})")
        _check_batch_fits(dataset, self._combined)
        dataset = self._partition(dataset, bool(shuffle), auto_distributed_partitioning, drop_last)
        if isinstance(dataset, _InstanceShare):
            shuffle = False  # the share shuffles the whole dataset itself, the same everywhere
        self._warn_remainder(dataset, drop_last)
        if persistent_workers is None:
            persistent_workers = num_workers > 0
        super().__init__(dataset, batch_size=self._combined, shuffle=bool(shuffle),
                         num_workers=num_workers, drop_last=drop_last,
                         persistent_workers=persistent_workers, **kwargs)
        self._accessor = self._make_accessor(async_options)

    def _partition(self, dataset, shuffle: bool, auto_partition: bool, drop_last: bool):
        """With several host processes, each takes its own contiguous share of the data."""
        processes = self.options.Distributed.num_distributed_processes
        if processes == 1 or not auto_partition:
            return dataset
        if isinstance(dataset, torch.utils.data.IterableDataset):
            raise ValueError("auto_distributed_partitioning does not support an IterableDataset; "
                             "split the data yourself and pass auto_distributed_partitioning=False")
        if shuffle and self.options.random_seed is None:
            raise ValueError("shuffling with several processes needs options.randomSeed(...) so "
                             "that every process draws the same order")
        return _InstanceShare(dataset, self.options, self._combined, drop_last, shuffle)

    def _warn_remainder(self, dataset, drop_last: bool):
        if drop_last or not hasattr(dataset, "__len__"):
            return
        remainder = len(dataset) % self._combined
        if remainder:
            warnings.warn(f"the dataset's {len(dataset)} samples are not a multiple of the "
                          f"{self._combined} each call consumes and drop_last=False: the last "
                          f"batch holds {remainder}. Switch to drop_last=True to avoid this "
                          f"special case.", stacklevel=3)

    def _make_accessor(self, async_options):
        if self._mode == DataLoaderMode.Sync:
            return None
        return AsynchronousDataAccessor(_SyncView(self), **(async_options or {}))

    @property
    def combinedBatchSize(self) -> int | None:
        """Samples one call of the model consumes (None with a batch_sampler)."""
        return self._combined

    def __iter__(self):
        if isinstance(self.dataset, _InstanceShare):
            self.dataset.next_epoch()
        if self._accessor is not None:
            return iter(self._accessor)
        # torch's worker processes fetch batches ahead of the loop; without them the host
        # prepares each batch between calls, while the device waits
        ahead = self.num_workers > 0
        return (mark_batch(batch, ahead) for batch in super().__iter__())

    def terminate(self):
        if self._accessor is not None:
            self._accessor.terminate()


def _check_batch_fits(dataset, combined: int) -> None:
    """One call's batch must fit in host memory (a map-style dataset: judged by its first sample)."""
    if isinstance(dataset, torch.utils.data.IterableDataset) or not hasattr(dataset, "__len__"):
        return
    samples = min(combined, len(dataset))  # torch never builds a batch bigger than the dataset
    if samples == 0:
        return
    host_memory.check_fits("one call's batch (batch_size x deviceIterations x "
                           "replicationFactor x gradientAccumulation)", samples,
                           host_memory.sample_bytes(dataset[0]),
                           "lower batch_size or deviceIterations")


class _SyncView:
    """The DataLoader iterated the plain way, for the background thread to read from."""

    def __init__(self, loader: DataLoader):
        self.loader = loader

    def __iter__(self):
        return torch.utils.data.DataLoader.__iter__(self.loader)

    def __len__(self):
        return len(self.loader)


def _check_sampler_alone(batch_size: int, shuffle, drop_last: bool) -> None:
    """A batch_sampler decides the batches: batch_size, shuffle and drop_last must stay unset."""
    given = {name: value for name, value, unset in (
        ("batch_size", batch_size, batch_size == 1), ("shuffle", shuffle, not shuffle),
        ("drop_last", drop_last, drop_last is True)) if not unset}
    if given:
        shown = ", ".join(f"{k}={v!r}" for k, v in given.items())
        raise ValueError(f"batch_sampler is exclusive with batch_size, shuffle and "
                         f"drop_last, but {shown} was also given; the batch_sampler "
                         f"decides the batches, so remove {', '.join(given)}")


class _InstanceShare(torch.utils.data.Dataset):
    """One process's contiguous share of a dataset split between several processes.

    PopTorch's rule: with drop_last, every process gets the same whole number of calls,
    per_process = combined x (N // (combined x P)) samples, process p starting at
    p x per_process; without it, the N samples are split as evenly as possible. Shuffling
    permutes the whole dataset with a generator seeded by options.randomSeed, drawing a new
    permutation each epoch, so all processes agree; leftover samples rotate in on alternate
    epochs. The order and offset live in shared memory so that persistent workers see them.
    """

    def __init__(self, dataset, options: Options, combined: int, drop_last: bool, shuffle: bool):
        n, processes = len(dataset), options.Distributed.num_distributed_processes
        index = options.Distributed.distributed_process_id
        if drop_last:
            per_process = combined * (n // (combined * processes))
            self.base_offset, self.length = index * per_process, per_process
            self.leftovers = n - per_process * processes
        else:
            sizes = [n // processes + (n % processes > p) for p in range(processes)]
            self.base_offset, self.length, self.leftovers = sum(sizes[:index]), sizes[index], 0
        self.dataset = dataset
        self.offset = torch.tensor([self.base_offset]).share_memory_()
        self.order: torch.Tensor | None = None
        self.generator: torch.Generator | None = None
        if shuffle:
            self.generator = torch.Generator().manual_seed(options.random_seed)
            self.order = torch.arange(n).share_memory_()
        self.epochs = 0

    def next_epoch(self) -> None:
        """A new global permutation (when shuffling) and the leftovers' turn (every other epoch)."""
        if self.generator is not None:
            self.order.copy_(torch.randperm(len(self.dataset), generator=self.generator))
        self.offset[0] = self.base_offset + (self.leftovers if self.epochs % 2 else 0)
        self.epochs += 1

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int):
        position = int(self.offset[0]) + index
        return self.dataset[int(self.order[position]) if self.order is not None else position]
