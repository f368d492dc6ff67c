"""The accessor's background pass and rebatching: whole calls from short batches, early reads."""
import os
import subprocess
import sys
import textwrap
import time

import pytest
import torch

from ipu_tutorials.errors import Error
from ipu_tutorials.poptorch._data_worker import Worker, rebatched


def sizes(batches):
    return [len(b[0]) if isinstance(b, tuple) else len(b) for b in batches]


@pytest.mark.parametrize("drop_last, expected", [(True, [4, 4]), (False, [4, 4, 1])])
def test_rebatching_joins_short_batches_and_only_the_end_can_be_short(drop_last, expected):
    # three "workers" whose last batches come short: 3 + 3 + 2 + 1 samples
    batches = [torch.arange(0, 3), torch.arange(3, 6), torch.arange(6, 8), torch.arange(8, 9)]
    result = list(rebatched(batches, 4, drop_last))
    assert sizes(result) == expected
    assert torch.equal(torch.cat(result), torch.arange(sum(expected)))  # order kept, none twice


def test_rebatching_keeps_tuples_and_dicts_together():
    batches = [(torch.arange(3), torch.arange(3) * 10), (torch.arange(3, 5), torch.arange(3, 5) * 10)]
    (x, y), = rebatched(batches, 4, drop_last=True)
    assert torch.equal(y, x * 10) and x.tolist() == [0, 1, 2, 3]
    dicts = [{"a": torch.arange(2)}, {"a": torch.arange(2, 4)}]
    assert [d["a"].tolist() for d in rebatched(dicts, 4, drop_last=True)] == [[0, 1, 2, 3]]


def settle(worker, expected, seconds=5.0):
    """Wait until the worker's buffer holds `expected` batches (it fills in the background)."""
    deadline = time.monotonic() + seconds
    while worker.filled != expected and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)  # and stays there
    return worker.filled


@pytest.mark.parametrize("early_preload, filled", [(False, 1), (True, 5)])
def test_the_worker_reads_the_first_batch_at_once_and_the_rest_early_only_if_asked(
        early_preload, filled):
    worker = Worker(lambda: iter(range(10)), buffer_size=5, early_preload=early_preload)
    worker.check_started()
    assert settle(worker, filled) == filled
    assert sum(worker.indices_mem) == filled and len(worker.indices_mem) == 5
    assert list(worker.batches()) == list(range(10))  # iterating lets it read on
    assert not worker.thread.join(2.0) and not worker.thread.is_alive()


def test_a_first_batch_that_fails_stops_the_worker_with_one_line(capsys):
    def broken():
        raise ValueError("sample 0 is corrupt")
        yield  # pylint: disable=unreachable

    worker = Worker(broken, buffer_size=2, early_preload=False)
    with pytest.raises(Error, match=r"worker thread failed to start: reading the first batch "
                                    r"raised ValueError"):
        worker.check_started()
    assert "ValueError: sample 0 is corrupt" in capsys.readouterr().err
    worker.thread.join(2.0)
    assert not worker.thread.is_alive()


def test_a_later_failure_reaches_the_consumer():
    def broken_later():
        yield 1
        raise KeyError("sample 1 is missing")

    worker = Worker(broken_later, buffer_size=2, early_preload=True)
    worker.check_started()
    batches = worker.batches()
    assert next(batches) == 1
    with pytest.raises(KeyError, match="sample 1 is missing"):
        next(batches)


EXIT_WHILE_READING = textwrap.dedent("""
    import torch
    from ipu_tutorials import poptorch

    class Noise(torch.utils.data.Dataset):  # each read draws, so the thread is inside torch
        def __len__(self):
            return 64

        def __getitem__(self, index):
            return torch.rand(1000)

    loader = poptorch.DataLoader(poptorch.Options(), Noise(), batch_size=4,
                                 mode=poptorch.DataLoaderMode.Async)
    for epoch in range(2):
        for batch in loader:
            pass
    # the program ends while the second epoch's thread may still be winding down
""")


def test_a_program_that_ends_with_its_loader_thread_alive_exits_cleanly():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for _ in range(2):  # the abort it guards against came at nearly every exit
        done = subprocess.run([sys.executable, "-c", EXIT_WHILE_READING], env=env, timeout=120,
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-500:]
