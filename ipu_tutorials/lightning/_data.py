"""Turn a stage's dataloader into a poptorch.DataLoader that feeds whole IPU calls."""
from __future__ import annotations

import warnings

import torch
from lightning.pytorch.utilities.exceptions import MisconfigurationException
from torch.utils.data import BatchSampler, RandomSampler, SequentialSampler

from .. import poptorch

# torch DataLoader settings carried over as they are.
_KEPT = ("num_workers", "collate_fn", "worker_init_fn", "generator", "persistent_workers")


def _index_wrapped(batch_sampler) -> BatchSampler | None:
    """The BatchSampler inside Lightning's prediction index wrapper, if that is what this is."""
    inner = getattr(batch_sampler, "_batch_sampler", None)
    return inner if type(inner) is BatchSampler else None


def _batch_settings(dataloader) -> tuple[int | None, object]:
    """(micro-batch size, sampler); batch size None means the user's own batch sampler."""
    if dataloader.batch_size is not None:
        return dataloader.batch_size, dataloader.sampler
    inner = _index_wrapped(dataloader.batch_sampler)
    if inner is not None:
        return inner.batch_size, inner.sampler
    return None, None


def to_poptorch_loader(dataloader, options: poptorch.Options, stage: str):
    """A poptorch.DataLoader with `options` reading the same data with the same micro-batch.

    A poptorch.DataLoader is kept as it is, and anything that is not a torch DataLoader is
    passed through. The IPU is compiled for one batch shape, so the last incomplete batch is
    dropped (with a warning naming how many samples are lost).

    Raises:
        MisconfigurationException: a batch sampler with more than one replica.
    """
    if isinstance(dataloader, poptorch.DataLoader) or not isinstance(
            dataloader, torch.utils.data.DataLoader):
        return dataloader
    kept = {name: getattr(dataloader, name) for name in _KEPT}
    if not kept["num_workers"]:
        kept["persistent_workers"] = False
    micro_batch, sampler = _batch_settings(dataloader)
    if micro_batch is None:
        return _with_batch_sampler(dataloader, options, kept)
    if isinstance(sampler, (RandomSampler, SequentialSampler)):
        kept["shuffle"] = isinstance(sampler, RandomSampler)
    else:
        kept["sampler"] = sampler
    loader = poptorch.DataLoader(options, dataloader.dataset, batch_size=micro_batch,
                                 drop_last=True, **kept)
    _warn_dropped(loader, stage)
    return loader


def _with_batch_sampler(dataloader, options: poptorch.Options, kept: dict):
    if options.replication_factor > 1:
        raise MisconfigurationException(  # Lightning 2.0.9's words (utilities/data.py), then why
            f"It is not possible to have a batch sampler in your dataloader, when running on "
            f"multiple IPU devices. (Replication factor {options.replication_factor}: each "
            f"replica needs its own equal share of every batch.) Pass batch_size= and a sampler= "
            f"instead of batch_sampler=, or use devices=1.")
    return poptorch.DataLoader(options, dataloader.dataset, batch_sampler=dataloader.batch_sampler,
                               **kept)


def _warn_dropped(loader: poptorch.DataLoader, stage: str) -> None:
    dataset = loader.dataset
    if not hasattr(dataset, "__len__") or loader.combinedBatchSize is None:
        return
    dropped = len(dataset) % loader.combinedBatchSize
    if dropped:
        warnings.warn(f"the {stage} data has {len(dataset)} samples; each IPU call takes "
                      f"{loader.combinedBatchSize}, so the last {dropped} are not used. Pick a "
                      f"batch size that divides the dataset to use them all.", stacklevel=3)
