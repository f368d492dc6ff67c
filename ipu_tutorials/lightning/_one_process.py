"""OneHostProcess: IPUStrategy's ranks and collectives, for replicas that live in one process."""
from __future__ import annotations

import torch


class OneHostProcess:
    """What Lightning asks a parallel strategy about processes, answered for one host process.

    The replicas of a simulated IPU run inside that process's IPU calls (several processes are
    poprun's), so the ranks are 0, the world is 1 and every collective returns its input, as
    Lightning 2.0.9's IPUStrategy answered most of these (docs/lightning.md lists the rest).
    """

    @property
    def root_device(self) -> torch.device:
        """The host CPU, which keeps the weights between IPU calls."""
        return torch.device("cpu")

    def model_to_device(self) -> None:
        """Nothing: the weights stay on the host."""

    @property
    def global_rank(self) -> int:
        """0: the replicas run inside one host process's IPU calls (Lightning 2.0.9 read it
        from the cluster environment: docs/lightning.md)."""
        return 0

    @property
    def local_rank(self) -> int:
        """0, as `global_rank`."""
        return 0

    @property
    def world_size(self) -> int:
        """1 host process, whatever the replication factor."""
        return 1

    @property
    def is_global_zero(self) -> bool:
        """True, as in Lightning 2.0.9's IPUStrategy: the one process logs and saves."""
        return True

    @property
    def distributed_sampler_kwargs(self) -> dict:
        """One replica of rank 0: no sampler splits the data, since each IPU call takes the
        whole batch of every replica (Lightning 2.0.9 gave `num_replicas` = devices here but,
        with `is_distributed` False, never used it)."""
        return {"num_replicas": 1, "rank": 0}

    def reduce(self, tensor, *args, **kwargs):
        """`tensor` unchanged, as Lightning 2.0.9's IPUStrategy: one host process holds it."""
        return tensor

    def barrier(self, name: str | None = None) -> None:
        """Nothing to wait for: one host process."""

    def broadcast(self, obj, src: int = 0):
        """`obj` unchanged, as Lightning 2.0.9's IPUStrategy."""
        return obj

    def all_gather(self, tensor, group=None, sync_grads: bool = False):
        """`tensor` unchanged, as Lightning 2.0.9's IPUStrategy."""
        return tensor
