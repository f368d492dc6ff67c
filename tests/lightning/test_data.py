"""A stage's torch DataLoader becomes a poptorch.DataLoader reading the same data with the same
micro-batch: shuffling and workers kept, the last incomplete call dropped with a warning."""
import warnings

import pytest
import torch
from torch.utils.data import BatchSampler, DataLoader, SequentialSampler, TensorDataset

pytest.importorskip("lightning.pytorch")

from lightning.pytorch.utilities.exceptions import MisconfigurationException  # noqa: E402

from ipu_tutorials import poptorch  # noqa: E402
from ipu_tutorials.lightning._data import to_poptorch_loader  # noqa: E402

DATA = TensorDataset(torch.arange(20.0))


def test_the_micro_batch_and_shuffling_carry_over_and_each_call_holds_d_micro_batches():
    opts = poptorch.Options().deviceIterations(2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loader = to_poptorch_loader(DataLoader(DATA, batch_size=5, shuffle=True), opts, "train")
    assert isinstance(loader, poptorch.DataLoader) and loader.combinedBatchSize == 10
    assert sorted(torch.cat([b[0] for b in loader]).tolist()) == list(range(20))


def test_the_last_incomplete_call_is_dropped_with_a_warning():
    opts = poptorch.Options().deviceIterations(3)
    with pytest.warns(UserWarning, match=r"the validation data has 20 samples; each IPU call "
                                         r"takes 12, so the last 8 are not used"):
        loader = to_poptorch_loader(DataLoader(DATA, batch_size=4), opts, "validation")
    assert [b[0].shape[0] for b in loader] == [12]


def test_poptorch_loaders_and_other_iterables_pass_through():
    opts = poptorch.Options()
    mine = poptorch.DataLoader(opts, DATA, batch_size=4)
    assert to_poptorch_loader(mine, opts, "train") is mine
    batches = [torch.ones(2)]
    assert to_poptorch_loader(batches, opts, "train") is batches


def test_a_batch_sampler_is_kept_on_one_replica_and_refused_on_several():
    sampler = BatchSampler(SequentialSampler(DATA), batch_size=4, drop_last=True)
    loader = to_poptorch_loader(DataLoader(DATA, batch_sampler=sampler), poptorch.Options(), "test")
    assert isinstance(loader, poptorch.DataLoader)
    # was wrong: the refusal was not in Lightning 2.0.9's words (utilities/data.py)
    with pytest.raises(MisconfigurationException, match=r"^It is not possible to have a batch "
                                                        r"sampler in your dataloader, when running "
                                                        r"on multiple IPU devices\. \(Replication "
                                                        r"factor 2: "):
        to_poptorch_loader(DataLoader(DATA, batch_sampler=sampler),
                           poptorch.Options().replicationFactor(2), "test")
