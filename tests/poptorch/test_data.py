"""poptorch.DataLoader and AsynchronousDataAccessor: batches hold one call's worth of samples."""
import gc
import re
import threading
import time
import warnings

import pytest
import torch

from ipu_tutorials import poptorch


def numbered(n):
    """A dataset whose samples are their own index, so batches show exactly what was drawn."""
    return torch.utils.data.TensorDataset(torch.arange(n), torch.arange(n) * 10)


def drain(iterable, timeout=10.0):
    """Iterate in a worker thread so a hang fails the test instead of stalling the suite."""
    result = {}

    def run():
        try:
            result["items"] = list(iterable)
        except Exception as error:  # re-raised below
            result["error"] = error

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout)
    assert not worker.is_alive(), "iteration hung"
    if "error" in result:
        raise result["error"]
    return result["items"]


# --- batch sizes -----------------------------------------------------------------------------------
@pytest.mark.parametrize("batch, d, r, a", [(1, 1, 1, 1), (4, 1, 1, 1), (2, 3, 1, 1),
                                            (2, 1, 4, 1), (2, 1, 1, 5), (3, 2, 2, 4)])
def test_combined_batch_size_is_the_product(options, batch, d, r, a):
    combined = batch * d * r * a
    samples = combined * 3 + combined // 2  # an incomplete fourth batch when combined > 1
    loader = poptorch.DataLoader(options(d=d, r=r, a=a), numbered(samples), batch_size=batch)
    assert loader.combinedBatchSize == combined
    assert loader.batch_size == combined  # the torch DataLoader's own batch size
    batches = list(loader)
    assert len(batches) == len(loader) == 3  # drop_last=True drops the incomplete last batch
    for index, (x, y) in enumerate(batches):
        assert x.shape == (combined,) and y.shape == (combined,)
        assert torch.equal(x, torch.arange(index * combined, (index + 1) * combined))
        assert torch.equal(y, x * 10)


@pytest.mark.parametrize("mode", [poptorch.DataLoaderMode.Sync, poptorch.DataLoaderMode.Async])
@pytest.mark.parametrize("batch, d, r, a, refused", [
    (10**9, 1, 1, 1, "one call takes 1,000,000,000 samples (batch_size 1,000,000,000 x "
                     "deviceIterations 1 x replicas 1 x gradientAccumulation 1) but the dataset "
                     "holds 100, so with drop_last=True no call can run"),
    (13, 2, 2, 2, "one call takes 104 samples (batch_size 13 x deviceIterations 2 x replicas 2 "
                  "x gradientAccumulation 2) but the dataset holds 100"),
])
def test_an_epoch_that_cannot_fill_one_call_is_refused_when_it_starts(options, mode, batch, d, r,
                                                                       a, refused):
    # was wrong: torch's BatchSampler first built lists as long as the batch (22 GB for 10**9);
    # PopTorch's loader has no call to give either (len 0) but runs the empty epoch silently
    loader = poptorch.DataLoader(options(d=d, r=r, a=a), numbered(100), batch_size=batch,
                                 drop_last=True, mode=mode)
    assert len(loader) == 0
    with pytest.raises(ValueError, match=re.escape(refused) + r".* or pass drop_last=False to "
                                         r"read the 100 samples as one short call$"):
        drain(loader)


def test_a_sampler_decides_how_many_samples_an_epoch_draws(options):
    sampler = torch.utils.data.RandomSampler(range(10), replacement=True, num_samples=40)
    loader = poptorch.DataLoader(options(d=2), numbered(10), batch_size=20, sampler=sampler)
    assert [len(x) for x, _ in loader] == [40]
    small = torch.utils.data.RandomSampler(range(10), replacement=True, num_samples=30)
    with pytest.raises(ValueError, match="one call takes 40 samples .* but the sampler draws 30"):
        drain(poptorch.DataLoader(options(d=2), numbered(10), batch_size=20, sampler=small))


def test_a_call_larger_than_the_dataset_without_drop_last_reads_it_as_one_short_call(options):
    # PopTorch's rule: a warning, then the remainder (here the whole dataset) as the last batch
    with pytest.warns(UserWarning, match="the dataset's 100 samples are not a multiple of the "
                                         "1000000000 each call consumes and drop_last=False"):
        loader = poptorch.DataLoader(options(), numbered(100), batch_size=10**9, drop_last=False)
    (x, _), = list(loader)
    assert x.tolist() == list(range(100))


def test_a_call_exactly_the_dataset_size_is_one_call(options):
    loader = poptorch.DataLoader(options(d=4), numbered(100), batch_size=25, drop_last=True)
    assert len(loader) == 1


def test_each_process_needs_a_whole_call_of_its_own(options):
    opts = options()
    opts.Distributed.configureProcessId(0, 3)
    with pytest.raises(ValueError, match=r"one call takes 40 samples in each of the 3 processes "
                                         r"\(batch_size 40 x .*\) but the dataset holds 100"):
        drain(poptorch.DataLoader(opts, numbered(100), batch_size=40))
    # each process reading the whole dataset needs only one call's worth
    whole = poptorch.DataLoader(opts, numbered(100), batch_size=40,
                                auto_distributed_partitioning=False)
    assert [len(x) for x, _ in whole] == [40, 40]


def test_batches_keep_the_sample_shape(options):
    data = torch.utils.data.TensorDataset(torch.randn(48, 1, 28, 28), torch.randint(0, 10, (48,)))
    loader = poptorch.DataLoader(options(d=2, a=3), data, batch_size=4)
    x, y = next(iter(loader))
    assert x.shape == (24, 1, 28, 28) and y.shape == (24,)
    assert len(loader) == 2


def test_input_replica_grouping_reduces_the_batch(options):
    opts = options(r=4).inputReplicaGrouping(2, poptorch.CommGroupType.Consecutive)
    loader = poptorch.DataLoader(opts, numbered(16), batch_size=2)
    assert loader.combinedBatchSize == 2 * 4 // 2


def test_remainder_with_drop_last_false_warns_and_keeps_the_short_batch(options):
    with pytest.warns(UserWarning, match=r"the dataset's 10 samples are not a multiple of the 4 "
                                         r"each call consumes and drop_last=False: the last batch "
                                         r"holds 2. Switch to drop_last=True"):
        loader = poptorch.DataLoader(options(d=2), numbered(10), batch_size=2, drop_last=False)
    sizes = [len(x) for x, _ in loader]
    assert sizes == [4, 4, 2] and len(loader) == 3


def test_no_warning_without_a_remainder_or_with_drop_last(options):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exact = poptorch.DataLoader(options(d=2), numbered(12), batch_size=2, drop_last=False)
        dropped = poptorch.DataLoader(options(d=2), numbered(10), batch_size=2)
    assert len(exact) == 3
    assert len(dropped) == 2 and [len(x) for x, _ in dropped] == [4, 4]


def test_shuffle_draws_whole_dataset_once_per_epoch(options):
    loader = poptorch.DataLoader(options(d=2), numbered(24), batch_size=3, shuffle=True)
    seen = torch.cat([x for x, _ in loader])
    assert sorted(seen.tolist()) == list(range(24))
    assert not torch.equal(seen, torch.arange(24))


# --- asynchronous loading ---------------------------------------------------------------------------
@pytest.mark.parametrize("shuffle", [False, True])
def test_async_mode_yields_the_same_batches_in_the_same_order(options, shuffle):
    def epoch(mode):
        torch.manual_seed(0)  # before the loader: an asynchronous one starts reading when made
        loader = poptorch.DataLoader(options(d=2, a=2), numbered(50), batch_size=3, shuffle=shuffle,
                                     drop_last=True, mode=mode)
        return drain(loader)

    sync = epoch(poptorch.DataLoaderMode.Sync)
    for mode in (poptorch.DataLoaderMode.Async, poptorch.DataLoaderMode.AsyncRebatched):
        batches = epoch(mode)
        assert len(batches) == len(sync) == 4
        for (x, y), (x_ref, y_ref) in zip(batches, sync):
            assert torch.equal(x, x_ref) and torch.equal(y, y_ref)


def test_async_loader_can_stop_early_and_start_again(options):
    loader = poptorch.DataLoader(options(), numbered(40), batch_size=2,
                                 mode=poptorch.DataLoaderMode.Async, async_options={"buffer_size": 2})
    assert len(loader) == 20
    for index, (x, _) in enumerate(loader):
        if index == 1:
            break
    batches = drain(loader)  # a new epoch starts from the beginning, after stopping the old one
    assert [x.tolist() for x, _ in batches[:2]] == [[0, 1], [2, 3]] and len(batches) == 20
    loader.terminate()


def test_a_loop_over_a_temporary_async_loader_or_accessor_reads_the_whole_epoch(options):
    # nothing but the loop holds them: the epoch's iterator must keep them alive to its end
    loader_batches = [x for x, _ in poptorch.DataLoader(
        options(), numbered(40), batch_size=2, mode=poptorch.DataLoaderMode.Async,
        async_options={"buffer_size": 2})]
    accessor_items = list(poptorch.AsynchronousDataAccessor(list(range(30)), buffer_size=2))
    assert [x.tolist() for x in loader_batches] == [[i, i + 1] for i in range(0, 40, 2)]
    assert accessor_items == list(range(30))


def test_a_rebatching_accessor_counts_its_own_batches():
    loader = torch.utils.data.DataLoader(numbered(40), batch_size=4)
    accessor = poptorch.AsynchronousDataAccessor(loader, rebatched_size=8)
    batches = drain(accessor)
    assert len(accessor) == len(batches) == 5 and all(len(x) == 8 for x, _ in batches)


def test_accessor_over_a_plain_iterable_keeps_the_order():
    accessor = poptorch.AsynchronousDataAccessor([torch.tensor(i) for i in range(10)],
                                                 buffer_size=3)
    assert len(accessor) == 10
    assert [t.item() for t in drain(accessor)] == list(range(10))
    assert [t.item() for t in drain(accessor)] == list(range(10))  # and again for a new epoch


def test_accessor_over_a_generator():
    accessor = poptorch.AsynchronousDataAccessor(i * i for i in range(5))
    assert drain(accessor) == [0, 1, 4, 9, 16]


def test_accessor_released_after_an_early_stop():
    accessor = poptorch.AsynchronousDataAccessor(list(range(4)), buffer_size=3)
    assert iter(accessor) is accessor  # its own iterator, as PopTorch's
    assert next(accessor) == 0
    time.sleep(0.2)  # let the loader fill the buffer and wait to hand over its end marker
    # the consumer stops reading while the loader waits for room in the buffer
    stopper = threading.Thread(target=accessor.terminate, daemon=True)
    stopper.start()
    stopper.join(5.0)
    assert not stopper.is_alive(), "terminate() hung on a loader blocked on a full buffer"
    assert drain(accessor) == [0, 1, 2, 3]


def test_accessor_reraises_errors_from_the_dataset():
    def broken():
        yield 1
        raise KeyError("sample 2 is missing")

    accessor = poptorch.AsynchronousDataAccessor(broken())
    with pytest.raises(KeyError, match="sample 2 is missing"):
        drain(accessor)


def test_accessor_buffer_size_must_be_positive():
    with pytest.raises(ValueError, match=r"AsynchronousDataAccessor\(buffer_size\) must be a "
                                         r"positive integer, got 0"):
        poptorch.AsynchronousDataAccessor([1], buffer_size=0)


# --- argument rules ----------------------------------------------------------------------------------
def test_batch_sampler_is_exclusive_with_batch_size_and_shuffle(options):
    sampler = torch.utils.data.BatchSampler(range(10), batch_size=3, drop_last=False)
    for kwargs, shown in [(dict(batch_size=4), "batch_size=4"), (dict(shuffle=True), "shuffle=True")]:
        with pytest.raises(ValueError, match=rf"batch_sampler is exclusive with batch_size and "
                                             rf"shuffle, but {shown} was also given; the "
                                             rf"batch_sampler decides the batches, so remove"):
            poptorch.DataLoader(options(), numbered(10), batch_sampler=sampler, **kwargs)
    loader = poptorch.DataLoader(options(), numbered(10), batch_sampler=sampler, shuffle=False)
    assert loader.combinedBatchSize is None
    assert [x.tolist() for x, _ in loader] == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]


@pytest.mark.parametrize("mode", [poptorch.DataLoaderMode.Sync, poptorch.DataLoaderMode.Async])
@pytest.mark.parametrize("drop_last, expected", [
    (True, [[0, 1, 2, 3, 4, 5], [6, 7, 8, 9, 10, 11]]),
    (False, [[0, 1, 2, 3, 4, 5], [6, 7, 8, 9, 10, 11], [12, 13]])])
def test_a_call_joins_as_many_sampler_batches_as_it_consumes(options, mode, drop_last, expected):
    # d=2: each call takes two of the sampler's batches of 3; drop_last decides the short end
    sampler = torch.utils.data.BatchSampler(range(14), batch_size=3, drop_last=False)
    loader = poptorch.DataLoader(options(d=2), numbered(14), batch_sampler=sampler,
                                 drop_last=drop_last, mode=mode)
    assert [x.tolist() for x, _ in drain(loader)] == expected


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(batch_size=0), ValueError, r"DataLoader\(batch_size\) must be a positive integer, got 0"),
    (dict(batch_size=2.0), TypeError, r"DataLoader\(batch_size\) expects an integer, got float"),
    (dict(num_workers=-1), ValueError, r"DataLoader\(num_workers\) must be an integer >= 0"),
    (dict(mode="async"), TypeError, r"mode must be a poptorch.DataLoaderMode, got 'async'"),
    (dict(batch_size=2, rebatched_worker_size=5), ValueError,
     r"rebatched_worker_size \(5\) must be at most the combined batch size \(4\)"),
])
def test_bad_arguments_are_refused(options, kwargs, error, message):
    with pytest.raises(error, match=message):
        poptorch.DataLoader(options(d=2), numbered(8), **kwargs)


def test_first_argument_must_be_options(options):
    with pytest.raises(TypeError, match=r"poptorch.DataLoader's first argument is a "
                                        r"poptorch.Options, got TensorDataset"):
        poptorch.DataLoader(numbered(4), numbered(4), batch_size=2)


# --- several host processes -----------------------------------------------------------------------------
def distributed(options, process_id, processes=2):
    opts = options()
    opts.Distributed.configureProcessId(process_id, processes)
    return opts


def test_each_process_reads_its_own_share(options):
    shares = [torch.cat([x for x, _ in poptorch.DataLoader(distributed(options, pid), numbered(10),
                                                           batch_size=1)])
              for pid in (0, 1)]
    assert shares[0].tolist() == [0, 1, 2, 3, 4] and shares[1].tolist() == [5, 6, 7, 8, 9]
    whole = poptorch.DataLoader(distributed(options, 1), numbered(10), batch_size=1,
                                auto_distributed_partitioning=False)
    assert len(whole) == 10


def test_shuffling_with_several_processes_needs_a_seed(options):
    with pytest.raises(AssertionError, match=r"shuffling with several processes needs "
                                             r"options.randomSeed\(...\)"):  # PopTorch asserts
        poptorch.DataLoader(distributed(options, 0), numbered(10), shuffle=True)
    poptorch.DataLoader(distributed(options, 0).clone().randomSeed(3), numbered(10), shuffle=True)


def test_iterable_dataset_cannot_be_partitioned_automatically(options):
    class Stream(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter(range(10))

    with pytest.raises(ValueError, match=r"auto_distributed_partitioning does not support an "
                                         r"IterableDataset; .* auto_distributed_partitioning=False"):
        poptorch.DataLoader(distributed(options, 0), Stream())
    loader = poptorch.DataLoader(distributed(options, 0), Stream(), batch_size=5,
                                 auto_distributed_partitioning=False)
    assert [x.tolist() for x in loader] == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]


# --- how the host prepared a batch, as the model's plan sees it -----------------------------------
def first_call_plan(loader):
    """Train a linear model for one call on the loader's first batch; return its plan."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)

    class WithLoss(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, x, y):
            out = self.model(x)
            return out, torch.nn.functional.cross_entropy(out, y)

    training = poptorch.trainingModel(WithLoss(), loader.options,
                                      torch.optim.SGD(model.parameters(), lr=0.1))
    x, y = next(iter(loader))
    training(x, y)
    if hasattr(loader, "terminate"):
        loader.terminate()
    return training.plan


def digits(n=64):
    return torch.utils.data.TensorDataset(torch.randn(n, 4), torch.randint(0, 2, (n,)))


@pytest.mark.parametrize("mode, ahead", [(poptorch.DataLoaderMode.Sync, False),
                                         (poptorch.DataLoaderMode.Async, True),
                                         (poptorch.DataLoaderMode.AsyncRebatched, True)])
def test_the_loader_mode_decides_whether_the_host_prepares_data_ahead(options, mode, ahead):
    opts = options(d=4).showCompilationProgressBar(False)
    plan = first_call_plan(poptorch.DataLoader(opts, digits(), batch_size=2, mode=mode))
    assert plan.spec.loader_async is ahead
    data = plan.host_data_seconds
    assert data > 0
    # between calls, the device waits for the whole preparation; ahead, only for what the
    # preparation takes beyond the device's own work. Either way it first waits for the host
    # process to hand the call's inputs over (the instance's work, collectives.py)
    waiting = plan.breakdown()["waiting for host data"]
    handover = plan.step_costs.instance_host
    device = plan.device_seconds - 1e-3  # without the call's two host latencies
    if ahead:
        assert waiting == pytest.approx(handover + max(0.0, data - handover - device), abs=1e-9)
    else:
        assert waiting == pytest.approx(data + handover)


def test_sync_and_async_loaders_give_the_same_call_but_not_the_same_time(options):
    opts = options(d=4).showCompilationProgressBar(False)
    sync = first_call_plan(poptorch.DataLoader(opts, digits(), batch_size=2))
    fast = first_call_plan(poptorch.DataLoader(opts, digits(), batch_size=2,
                                               mode=poptorch.DataLoaderMode.Async))
    assert sync.device_seconds == pytest.approx(fast.device_seconds)
    assert sync.call_seconds == pytest.approx(fast.device_seconds + fast.host_data_seconds
                                              + fast.step_costs.instance_host)
    assert "before the device" in sync.breakdown_text()
    assert "overlapped with the device" in fast.breakdown_text()


def test_workers_and_the_accessor_prepare_ahead_and_plain_tensors_keep_the_default(options):
    opts = options(d=2).showCompilationProgressBar(False)
    workers = poptorch.DataLoader(opts, digits(), batch_size=2, num_workers=1)
    assert first_call_plan(workers).spec.loader_async
    accessor = poptorch.AsynchronousDataAccessor(poptorch.DataLoader(opts, digits(), batch_size=2))
    accessor.options = opts
    assert first_call_plan(accessor).spec.loader_async
    x, y = next(iter(poptorch.DataLoader(opts, digits(), batch_size=2)))
    assert getattr(x, "_ipu_tutorials_prepared_ahead") is False
    # tensors that came from no loader: the plan assumes data prepared ahead, as it always has
    assert first_call_plan(Batches(opts, [(x.clone(), y.clone())])).spec.loader_async


class Batches(list):
    """A list of batches that carries the options, as first_call_plan expects of a loader."""

    def __init__(self, options, batches):
        super().__init__(batches)
        self.options = options


# --- PopTorch's rules for unbatched, rebatched and early-reading loaders ---------------------------
class Counting(torch.utils.data.IterableDataset):
    """0..n-1, split between torch's worker processes so each worker's last batch comes short."""

    def __init__(self, n):
        super().__init__()
        self.n = n

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        workers, index = (1, 0) if info is None else (info.num_workers, info.id)
        return iter(range(index, self.n, workers))


def test_batch_size_none_yields_torch_samples_unbatched(options):
    loader = poptorch.DataLoader(options(), Counting(5), batch_size=None, drop_last=False,
                                 mode=poptorch.DataLoaderMode.Async)
    assert loader.combinedBatchSize is None
    assert [int(t) for t in drain(loader)] == [0, 1, 2, 3, 4]


def test_batch_size_none_cannot_be_split_between_processes():
    opts = poptorch.Options()
    opts.Distributed.configureProcessId(0, 2)
    with pytest.raises(ValueError, match=r"auto_distributed_partitioning needs a batch_size"):
        poptorch.DataLoader(opts, numbered(8), batch_size=None, drop_last=False)


@pytest.mark.parametrize("mode, drop_last, calls", [
    (poptorch.DataLoaderMode.Async, True, 4),  # each of 2 workers drops its 3 left over
    (poptorch.DataLoaderMode.AsyncRebatched, True, 5),  # 22 // 4: only the epoch's end is short
    (poptorch.DataLoaderMode.AsyncRebatched, False, 6),
    (poptorch.DataLoaderMode.Async, False, 6)])  # Async with a remainder rebatches too
def test_rebatching_joins_the_workers_short_batches(options, mode, drop_last, calls):
    loader = poptorch.DataLoader(options(), Counting(22), batch_size=4, num_workers=2,
                                 drop_last=drop_last, mode=mode)
    batches = drain(loader, timeout=60)
    assert len(batches) == calls and all(len(b) == 4 for b in batches[:5])
    samples = torch.cat(batches).tolist()
    assert len(set(samples)) == len(samples)  # none twice
    loader.terminate()


def test_a_rebatching_loader_counts_its_calls_from_the_samples(options):
    kwargs = dict(batch_size=2, mode=poptorch.DataLoaderMode.AsyncRebatched,
                  rebatched_worker_size=1)
    assert len(poptorch.DataLoader(options(d=2), numbered(10), **kwargs)) == 2
    assert len(poptorch.DataLoader(options(d=2), numbered(10), drop_last=False, **kwargs)) == 3
    with pytest.raises(ValueError, match=r"async_options cannot hold rebatched_size"):
        poptorch.DataLoader(options(), numbered(10), async_options={"rebatched_size": 2}, **kwargs)


class Broken(torch.utils.data.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, index):
        raise RuntimeError("unreadable sample")


def test_a_broken_dataset_fails_where_the_accessor_is_made(options, capsys):
    loader = poptorch.DataLoader(options(), Broken(), batch_size=2)  # made: nothing read yet
    with pytest.raises(poptorch.Error, match=r"worker thread failed to start: reading the "
                                             r"first batch raised RuntimeError"):
        poptorch.AsynchronousDataAccessor(loader)
    assert "RuntimeError: unreadable sample" in capsys.readouterr().err


def test_early_preload_fills_the_buffer_before_iteration(options):
    def filled(early):
        loader = poptorch.DataLoader(options(), numbered(10), mode=poptorch.DataLoaderMode.Async,
                                     async_options={"early_preload": early, "buffer_size": 4})
        deadline = time.monotonic() + 5
        while loader._accessor._worker.filled < (4 if early else 1) and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)
        return loader._accessor._worker.filled

    assert (filled(False), filled(True)) == (1, 4)


def test_a_dropped_loader_stops_its_reading_thread(options):
    loader = poptorch.DataLoader(options(), numbered(10), mode=poptorch.DataLoaderMode.Async)
    thread = loader._accessor._worker.thread
    del loader  # never iterated: the thread waits to read on, and must not outlive the loader
    gc.collect()
    thread.join(5.0)
    assert not thread.is_alive()


def test_an_async_loader_draws_its_first_shuffle_when_made_in_the_callers_thread(options):
    # the first batch is read while the loader is made, so the epoch's random draws come
    # before anything the program draws next (here a model's weights), never in between
    def first_epoch(mode):
        torch.manual_seed(0)
        loader = poptorch.DataLoader(options(), numbered(12), batch_size=3, shuffle=True,
                                     mode=mode)
        torch.nn.Linear(50, 50)  # draws from the same generator
        return [x.tolist() for x, _ in drain(loader)]

    made_first = first_epoch(poptorch.DataLoaderMode.Async)
    assert made_first == first_epoch(poptorch.DataLoaderMode.Async)  # deterministic
    torch.manual_seed(0)
    sync = poptorch.DataLoader(options(), numbered(12), batch_size=3, shuffle=True)
    assert made_first == [x.tolist() for x, _ in drain(sync)]


def test_a_loader_terminated_before_its_first_epoch_still_reads_it_whole(options):
    loader = poptorch.DataLoader(options(), numbered(6), batch_size=2,
                                 mode=poptorch.DataLoaderMode.Async)
    loader.terminate()  # stops the pass that began when the loader was made
    assert [x.tolist() for x, _ in drain(loader)] == [[0, 1], [2, 3], [4, 5]]
