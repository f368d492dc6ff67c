"""Per-replica model state: each replica's own buffers, and PopTorch's broadcast-buffers rule.

On an IPU every replica holds its own copy of the model. Parameters stay equal because every
replica applies the same reduced update. Buffers changed in place by the forward pass (a counter,
BatchNorm's running statistics) would drift apart: PopTorch refuses such updates while it is
asked to keep buffers in sync (broadcastBuffers, the default), and with broadcastBuffers(False)
each replica keeps its own. The host sees replica 0's copy.
"""
from __future__ import annotations

import torch

from ..errors import Error

BROADCAST_ERROR = (
    "PopTorch does not support broadcasting buffers. If your model is able to tolerate buffers "
    "becoming out of sync between replicas, you can disable buffer broadcasting using "
    "poptorch.Options.broadcastBuffers(False). (The model updated {names} in place while "
    "replicationFactor is {replicas}.)")


def _state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {**dict(model.named_parameters()), **dict(model.named_buffers())}


def _buffer_slots(model: torch.nn.Module) -> dict[str, tuple[torch.nn.Module, str]]:
    """Each buffer's full name -> (the module that holds it, its key there)."""
    return {f"{prefix}.{key}" if prefix else key: (module, key)
            for prefix, module in model.named_modules()
            for key, value in module._buffers.items() if value is not None}


def _version(tensor: torch.Tensor) -> int | None:
    """The in-place update counter; None for an inference tensor (torch.inference_mode, as
    Lightning's evaluation loops use), which has none: its values are compared instead."""
    return None if tensor.is_inference() else tensor._version


class ReplicaState:
    """The buffers of replicas 1..R-1 (replica 0's are the module's own) and the rule check.

    `forward(r, run)` runs replica r's forward pass `run()` against that replica's buffers.
    """

    def __init__(self, model: torch.nn.Module, replicas: int, broadcast: bool):
        self.model, self.replicas, self.broadcast = model, replicas, broadcast
        # PopTorch checks once, when it compiles the graph
        self.checked = replicas == 1 or not broadcast
        self.copies: list[dict[str, torch.Tensor]] = []
        self.reset()

    def reset(self) -> None:
        """Broadcast the module's buffers to every replica (as uploading the weights does)."""
        if self.broadcast or self.replicas == 1:
            self.copies = []
            return
        slots = _buffer_slots(self.model)
        self.copies = [{n: m._buffers[k].detach().clone() for n, (m, k) in slots.items()}
                       for _ in range(self.replicas - 1)]

    def upload(self, names: list[str]) -> None:
        """Give every replica the module's current values of these buffers (a host upload)."""
        values = dict(self.model.named_buffers())
        for own in self.copies:
            for name in names:
                own[name] = values[name].detach().clone()

    def forward(self, replica: int, run):
        if not self.checked:
            return self._first_forward(run)
        if replica == 0 or not self.copies:
            return run()
        own = self.copies[replica - 1]
        # Swap tensors rather than copy values: autograd may have saved the replica's buffers
        # (BatchNorm's statistics) for the backward pass that follows.
        slots = _buffer_slots(self.model)
        replica0 = {name: module._buffers[key] for name, (module, key) in slots.items()}
        for name, (module, key) in slots.items():
            module._buffers[key] = own[name]
        try:
            return run()
        finally:
            for name, (module, key) in slots.items():
                own[name] = module._buffers[key]
                module._buffers[key] = replica0[name]

    def _first_forward(self, run):
        """Run replica 0's first forward pass and refuse in-place updates that need a broadcast."""
        tensors = _state(self.model)
        versions = {n: _version(t) for n, t in tensors.items()}
        saved = {n: t.detach().clone() for n, t in tensors.items()}
        result = run()
        changed = [n for n, t in tensors.items()
                   if (versions[n] is None and not torch.equal(t, saved[n]))
                   or (versions[n] is not None and _version(t) != versions[n])]
        if changed:
            with torch.no_grad():  # leave the model as it was: PopTorch fails before running
                for name in changed:
                    tensors[name].copy_(saved[name])
            raise Error(BROADCAST_ERROR.format(names=", ".join(changed), replicas=self.replicas))
        self.checked = True
        return result
