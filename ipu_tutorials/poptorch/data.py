"""poptorch.DataLoader and AsynchronousDataAccessor: batches sized for a whole call."""
from __future__ import annotations

import functools
import warnings
import weakref

import torch
from torch.utils._pytree import tree_flatten

from ..support import host_memory
from ._checks import check_int
from ._data_worker import Worker, grouped, rebatched
from ._to_simulator import PREPARED_AHEAD, declared_spec
from .enums import DataLoaderMode, SharingStrategy
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
    Loading starts here: a dataset whose first batch fails raises at once.
    """

    def __init__(self, dataset, buffer_size: int = 3, miss_sleep_time_in_ms: float = 0.1,
                 load_indefinitely: bool = True, early_preload: bool = False,
                 sharing_strategy=SharingStrategy.ForkServer, rebatched_size: int | None = None):
        # PopTorch keeps all but rebatched_size private; sharing_strategy is its process's
        self._dataset = dataset
        self._buffer_size = check_int("AsynchronousDataAccessor(buffer_size)", buffer_size)
        self.rebatched_size = None if rebatched_size is None else check_int(
            "AsynchronousDataAccessor(rebatched_size)", rebatched_size)
        self._load_indefinitely, self._early_preload = load_indefinitely, bool(early_preload)
        self._worker: Worker | None = None
        self._epoch = None  # this epoch's batches: the accessor is its own iterator
        self._worker, self._fresh = self._start(), True

    def __len__(self) -> int:
        """Batches an epoch yields (a loader rebatched here: its samples / rebatched_size)."""
        batch_size = getattr(self._dataset, "batch_size", None)
        if self.rebatched_size is None or not batch_size:
            return len(self._dataset)
        return len(self._dataset) * batch_size // self.rebatched_size

    def _start(self) -> Worker:
        # PopTorch's rule: a dataset may say whether rebatching drops the short end (default yes)
        drop_last = getattr(self._dataset, "rebatched_drop_last", True)
        worker = Worker(functools.partial(_batches, self._dataset, self.rebatched_size, drop_last),
                        self._buffer_size, self._early_preload)
        try:
            worker.check_started()
        except BaseException:
            worker.terminate()
            raise
        return worker

    def __iter__(self) -> "AsynchronousDataAccessor":
        """Start an epoch: the pass begun when the accessor was made serves the first one
        (unless terminate() stopped it); the accessor is its own iterator, as PopTorch's."""
        if not self._fresh or self._worker.stop.is_set():
            self.terminate()  # a pass left unfinished (break) must not read on
            self._worker = self._start()
        self._fresh = False
        self._epoch = (mark_batch(item, prepared_ahead=True) for item in self._worker.batches())
        return self

    def __next__(self):
        return next(self._epoch if self._epoch is not None else iter(self)._epoch)

    def terminate(self):
        """Stop the background loader (it stops by itself at the end of an epoch)."""
        if self._worker is not None:
            self._worker.terminate()

    def __del__(self):
        worker = getattr(self, "_worker", None)  # absent when __init__ refused its arguments
        if worker is not None:
            worker.stop.set()


def _kept_alive(owner, batches):
    """`batches`, holding `owner` until the epoch ends: a loop straight over a temporary
    loader or accessor must not lose it mid-epoch, since its __del__ stops the loader thread."""
    yield from batches  # closing this generator (a break) closes `batches` too
    del owner


def _batches(dataset, rebatched_size: int | None, drop_last: bool):
    """The accessor's source: the dataset's batches, regrouped when rebatching."""
    return dataset if rebatched_size is None else rebatched(dataset, rebatched_size, drop_last)


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
        self._spec = declared_spec(options)  # the counts a call consumes, as the model reads them
        self._mode, self.rebatched_drop_last = mode, drop_last
        self._per_call = self._spec.micro_batches_per_input
        self._grouping = batch_sampler is not None and self._per_call > 1
        self._unfillable = None  # why an epoch could not run a single call (see _unfillable_call)
        if batch_sampler is not None:
            _check_sampler_alone(batch_size, shuffle)
            self._combined = None
            super().__init__(dataset, batch_sampler=batch_sampler, num_workers=num_workers, **kwargs)
            self._accessor = self._make_accessor(async_options, None)
            return
        check_int("DataLoader(num_workers)", num_workers, minimum=0)
        self._combined = _combined_batch_size(self._per_call, batch_size)
        processes = (options.Distributed.num_distributed_processes if auto_distributed_partitioning
                     else 1)
        self._unfillable = _unfillable_call(dataset, kwargs.get("sampler"), options, batch_size,
                                            self._combined, processes, drop_last)
        _check_batch_fits(dataset, self._combined)
        dataset = self._partition(dataset, bool(shuffle), auto_distributed_partitioning, drop_last)
        if isinstance(dataset, _InstanceShare):
            shuffle = False  # the share shuffles the whole dataset itself, the same everywhere
        self._warn_remainder(dataset, drop_last)
        if persistent_workers is None:
            persistent_workers = num_workers > 0
        worker_batch = _worker_batch(rebatched_worker_size, self._combined)
        torch_batch, rebatch = self._combined, _rebatches(mode, drop_last, self._combined)
        if rebatch:  # torch's batches may come short; the accessor joins them (and drops the end)
            torch_batch, drop_last = worker_batch, False
        super().__init__(dataset, batch_size=torch_batch, shuffle=bool(shuffle),
                         num_workers=num_workers, drop_last=drop_last,
                         persistent_workers=persistent_workers, **kwargs)
        self._next_epoch_drawn = self._draw_epoch()  # before the accessor starts reading it
        # (no reading ahead of an epoch that cannot run: iterating says why, see _plain_batches)
        self._accessor = None if self._unfillable else self._make_accessor(
            async_options, self._combined if rebatch else None)

    def _draw_epoch(self) -> bool:
        """A split dataset's order and leftovers for the next epoch; True when drawn."""
        if isinstance(self.dataset, _InstanceShare):
            self.dataset.next_epoch()
        return True

    def _partition(self, dataset, shuffle: bool, auto_partition: bool, drop_last: bool):
        """With several host processes, each takes its own contiguous share of the data."""
        if self._spec.instances == 1 or not auto_partition:
            return dataset
        if self._combined is None:
            raise ValueError("auto_distributed_partitioning needs a batch_size (each process's "
                             "share is a whole number of calls), not batch_size=None; pass a "
                             "batch_size or auto_distributed_partitioning=False")
        if isinstance(dataset, torch.utils.data.IterableDataset):
            raise ValueError("auto_distributed_partitioning does not support an IterableDataset; "
                             "split the data yourself and pass auto_distributed_partitioning=False")
        if shuffle and self.options._value("random_seed") is None:  # PopTorch asserts it
            raise AssertionError("shuffling with several processes needs options.randomSeed("
                                 "...) so that every process draws the same order")
        seed = self.options._value("random_seed") if shuffle else None
        return _InstanceShare(dataset, self._spec, self._combined, drop_last, seed)

    def _warn_remainder(self, dataset, drop_last: bool):
        if drop_last or not hasattr(dataset, "__len__") or self._combined is None:
            return
        remainder = len(dataset) % self._combined
        if remainder:
            warnings.warn(f"the dataset's {len(dataset)} samples are not a multiple of the "
                          f"{self._combined} each call consumes and drop_last=False: the last "
                          f"batch holds {remainder}. Switch to drop_last=True to avoid this "
                          f"special case.", stacklevel=3)

    def _make_accessor(self, async_options, rebatched_size: int | None):
        if self._mode == DataLoaderMode.Sync:
            return None
        async_options = dict(async_options or {})
        if "rebatched_size" in async_options:
            raise ValueError("async_options cannot hold rebatched_size: the DataLoader sets it "
                             "(use mode=DataLoaderMode.AsyncRebatched and rebatched_worker_size)")
        return AsynchronousDataAccessor(_SyncView(self), rebatched_size=rebatched_size,
                                        **async_options)

    def __len__(self) -> int:
        """Calls in an epoch; when the accessor rebatches, counted from the samples."""
        size = self._accessor.rebatched_size if self._accessor is not None else None
        if size is None:
            return super().__len__()
        calls, short = divmod(len(self.dataset), size)
        return calls + (1 if short and not self.rebatched_drop_last else 0)

    @property
    def combinedBatchSize(self) -> int | None:
        """Samples one call of the model consumes (None with a batch_sampler)."""
        return self._combined

    def __iter__(self):
        if not getattr(self, "_next_epoch_drawn", True):  # (a batch_sampler's loader has none)
            self._draw_epoch()
        self._next_epoch_drawn = False
        if self._accessor is not None:
            # the accessor's epoch, started now (a break closes it, releasing the thread)
            return _kept_alive(self, iter(self._accessor)._epoch)
        # torch's worker processes fetch batches ahead of the loop; without them the host
        # prepares each batch between calls, while the device waits
        ahead = self.num_workers > 0
        return (mark_batch(batch, ahead) for batch in self._plain_batches())

    def _plain_batches(self):
        """torch's batches, a batch_sampler's joined a call's worth at a time."""
        if self._unfillable:  # before torch's BatchSampler builds lists as long as the batch
            raise ValueError(self._unfillable)
        batches = super().__iter__()
        if not self._grouping:
            return batches
        return grouped(batches, self._per_call, self.rebatched_drop_last)

    def terminate(self):
        """Stop the loader's background reading (`DataLoaderMode.Async` and
        `AsyncRebatched`); with `Sync` it does nothing, as in PopTorch. A later epoch starts
        reading again."""
        if self._accessor is not None:
            self._accessor.terminate()


def _combined_batch_size(per_call: int, batch_size: int | None) -> int | None:
    """Samples one call consumes: batch_size x the batches per call (RunSpec's
    micro_batches_per_input, deviceIterations x gradientAccumulation x replica groups); None
    with batch_size=None (torch's samples, unbatched)."""
    if batch_size is None:
        return None
    return check_int("DataLoader(batch_size)", batch_size) * per_call


def _rebatches(mode: DataLoaderMode, drop_last: bool, combined: int | None) -> bool:
    """PopTorch's rule: the accessor regroups torch's batches into whole calls with
    AsyncRebatched, and with Async when drop_last=False could leave short batches mid-epoch."""
    if combined is None or mode == DataLoaderMode.Sync:
        return False
    return mode == DataLoaderMode.AsyncRebatched or (not drop_last and combined > 1)


def _worker_batch(rebatched_worker_size: int | None, combined: int | None) -> int | None:
    """The batch torch builds when the accessor rebatches: rebatched_worker_size, at most a call's."""
    if rebatched_worker_size is None or combined is None:
        return combined
    check_int("DataLoader(rebatched_worker_size)", rebatched_worker_size)
    if rebatched_worker_size > combined:
        raise ValueError(f"rebatched_worker_size ({rebatched_worker_size}) must be at most the "
                         f"combined batch size ({combined})")
    return rebatched_worker_size


def _unfillable_call(dataset, sampler, options: Options, batch_size: int | None,
                     combined: int | None, processes: int, drop_last: bool) -> str | None:
    """Why, with drop_last=True, not one call can run: it takes more samples than there are.

    PopTorch then runs an epoch of no calls, silently (its len() is 0, as here), while torch's
    BatchSampler first builds lists as long as the batch (a batch of 10**9 grows the process by
    22 GB): the loader refuses to start such an epoch. With drop_last=False the samples make one
    short call, as in PopTorch. None when a call can run, or the count is unknown.
    """
    if not drop_last or batch_size is None:
        return None
    try:  # a sampler, when given, decides how many samples an epoch draws
        samples = len(sampler) if sampler is not None else len(dataset)
    except TypeError:  # an IterableDataset or sampler without a length
        return None
    shared = processes if sampler is None else 1  # each process reads its share of the dataset
    if combined * shared <= samples:
        return None
    where = f" in each of the {shared} processes" if shared > 1 else ""
    replicas = options.replication_factor // options.input_group_size
    return (f"poptorch.DataLoader: one call takes {combined:,} samples{where} (batch_size "
            f"{batch_size:,} x deviceIterations {options.device_iterations} x replicas "
            f"{replicas} x gradientAccumulation {options.Training.gradient_accumulation}) but "
            f"the {'sampler draws' if sampler is not None else 'dataset holds'} {samples:,}, so "
            f"with drop_last=True no call can run; lower batch_size or deviceIterations, or pass "
            f"drop_last=False to read the {samples:,} samples as one short call")


def _check_batch_fits(dataset, combined: int | None) -> None:
    """One call's batch must fit in host memory (a map-style dataset: judged by its first sample)."""
    if isinstance(dataset, torch.utils.data.IterableDataset) or not hasattr(dataset, "__len__"):
        return
    if combined is None:
        combined = 1  # torch yields the samples one by one
    samples = min(combined, len(dataset))  # torch never builds a batch bigger than the dataset
    first = _first_sample(dataset) if samples else None
    if first is None:
        return
    host_memory.check_fits("one call's batch (batch_size x deviceIterations x "
                           "replicationFactor x gradientAccumulation)", samples,
                           host_memory.sample_bytes(first),
                           "lower batch_size or deviceIterations")


def _first_sample(dataset):
    """dataset[0], or None when reading it fails: the loader must not fail where PopTorch's
    does not; the error comes again, with torch's or the accessor's message, where it is read."""
    try:
        return dataset[0]
    except Exception:  # pylint: disable=broad-except  (any dataset's error, raised again later)
        return None


class _SyncView:
    """The DataLoader iterated the plain way, for the background thread to read from.

    It holds the loader weakly: the thread holds the view, and must not keep a loader the
    user dropped (and its accessor, whose __del__ stops the thread) alive."""

    def __init__(self, loader: DataLoader):
        self.loader = weakref.ref(loader)
        self.rebatched_drop_last = loader.rebatched_drop_last

    def __iter__(self):
        loader = self.loader()
        return iter(()) if loader is None else loader._plain_batches()

    def __len__(self):
        return len(self.loader())


def _check_sampler_alone(batch_size: int, shuffle) -> None:
    """A batch_sampler decides the batches: batch_size and shuffle must stay unset (drop_last
    decides whether a short last call's worth of its batches is kept)."""
    given = {name: value for name, value, unset in (
        ("batch_size", batch_size, batch_size == 1), ("shuffle", shuffle, not shuffle))
        if not unset}
    if given:
        shown = ", ".join(f"{k}={v!r}" for k, v in given.items())
        raise ValueError(f"batch_sampler is exclusive with batch_size and shuffle, but {shown} "
                         f"was also given; the batch_sampler decides the batches, so remove "
                         f"{', '.join(given)}")


class _InstanceShare(torch.utils.data.Dataset):
    """One process's contiguous share of a dataset split between several processes.

    PopTorch's rule: with drop_last, every process gets the same whole number of calls,
    per_process = combined x (N // (combined x P)) samples, process p starting at
    p x per_process; without it, the N samples are split as evenly as possible. Shuffling
    permutes the whole dataset with a generator seeded by options.randomSeed, drawing a new
    permutation each epoch, so all processes agree; leftover samples rotate in on alternate
    epochs. The order and offset live in shared memory so that persistent workers see them.
    """

    def __init__(self, dataset, spec, combined: int, drop_last: bool, seed: int | None):
        n, processes, index = len(dataset), spec.instances, spec.instance
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
        if seed is not None:
            self.generator = torch.Generator().manual_seed(seed)
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
