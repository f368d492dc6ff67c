"""Per-replica model state: each replica's own buffers, and PopTorch's broadcast-buffers rule.

On an IPU every replica holds its own copy of the model's variables, written from the host at
upload. Parameters stay equal because every replica applies the same reduced update. A buffer
the forward pass changes in place would drift apart, so PopTorch refuses such an update while it
is asked to keep buffers in sync (broadcastBuffers, the default); with broadcastBuffers(False)
each replica keeps its own. The host reads replica 0's copy.

Two kinds of change never meet that refusal in PopTorch 3.4 (sdk/poptorch/3.4.0), so they do
not here either:

- BatchNorm's running statistics. The refusal comes from the in-place tracker
  (poptorch/source/InplaceOps.cpp), which only sees ops whose schema marks an argument as
  written; `aten::batch_norm`'s running_mean and running_var carry no such mark. PopTorch lowers
  the op to PopART's BatchNormalization (popart_canonicalization/NormalizationOps.cpp), which
  updates them itself: each replica from its own micro-batch's statistics, copied into its own
  variables (PopART sdk/poplar/3.4.0 willow/src/op/batchnorm.cpp, VariableUpdateType::Copy;
  popx/op/batchnormx.cpp computes them with no collective). So every replica keeps its own.
- Integer buffers (BatchNorm's num_batches_tracked, a counter): PopART has no integer
  variables, so PopTorch traces them as constants (JitDispatch::addParameter) and an in-place
  update of one is never an alias of a graph input. On the IPU such a buffer keeps its host
  value; here it counts, per replica (docs/differences.md).
"""
from __future__ import annotations

import inspect

import torch
from torch.overrides import TorchFunctionMode

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


_F_BATCH_NORM = inspect.signature(torch.nn.functional.batch_norm)
# torch.batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn)
_TORCH_BATCH_NORM = ("input", "weight", "bias", "running_mean", "running_var", "training")


def _running_statistics(func, args: tuple, kwargs: dict) -> list[torch.Tensor]:
    """The running_mean and running_var a training batch_norm call updates (else none)."""
    if func is torch.nn.functional.batch_norm:
        bound = _F_BATCH_NORM.bind(*args, **kwargs)
        bound.apply_defaults()
        named = bound.arguments
    elif func is torch.batch_norm:
        named = {**dict(zip(_TORCH_BATCH_NORM, args)), **kwargs}
    else:
        return []
    if not named.get("training"):
        return []
    return [t for t in (named.get("running_mean"), named.get("running_var"))
            if isinstance(t, torch.Tensor)]


class _BatchNormStatistics(TorchFunctionMode):
    """Records the running statistics that batch_norm calls update while it is active."""

    def __init__(self):
        super().__init__()
        self.tensors: list[torch.Tensor] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.tensors += _running_statistics(func, args, kwargs)
        return func(*args, **kwargs)

    def updated(self, tensor: torch.Tensor) -> bool:
        return any(tensor is t for t in self.tensors)


def _exempt(tensor: torch.Tensor, statistics: _BatchNormStatistics) -> bool:
    """An update PopTorch never refuses: BatchNorm's running statistics, an integer buffer."""
    return not tensor.is_floating_point() or statistics.updated(tensor)


class ReplicaState:
    """The buffers of replicas 1..R-1 (replica 0's are the module's own) and the rule check.

    `forward(r, run)` runs replica r's forward pass `run()` against that replica's buffers.
    With broadcastBuffers(False) each replica keeps every buffer for itself; with
    broadcastBuffers(True), only those the first forward pass was allowed to change (the exempt
    ones above): the others cannot change, so the replicas share them.
    """

    def __init__(self, model: torch.nn.Module, replicas: int, broadcast: bool):
        self.model, self.replicas, self.broadcast = model, replicas, broadcast
        # PopTorch checks once, when it compiles the graph
        self.checked = replicas == 1 or not broadcast
        self.own: set[str] | None = set() if broadcast else None  # None: every buffer
        self.copies: list[dict[str, torch.Tensor]] = []
        self.reset()

    def reset(self) -> None:
        """Broadcast the module's buffers to every replica (as uploading the weights does)."""
        values = dict(self.model.named_buffers())
        self._copy_to_replicas({n: v for n, v in values.items()
                                if self.own is None or n in self.own})

    def _copy_to_replicas(self, values: dict[str, torch.Tensor]) -> None:
        self.copies = [{n: v.detach().clone() for n, v in values.items()}
                       for _ in range(self.replicas - 1)]

    def upload(self, names: list[str]) -> None:
        """Give every replica the module's current values of these buffers (a host upload)."""
        values = dict(self.model.named_buffers())
        for own in self.copies:
            for name in names:
                if name in own:  # (a buffer the replicas share is the module's own)
                    own[name] = values[name].detach().clone()

    def forward(self, replica: int, run):
        if not self.checked:
            return self._first_forward(run)
        if replica == 0 or not self.copies or not self.copies[replica - 1]:
            return run()
        own = self.copies[replica - 1]
        # Swap tensors rather than copy values: autograd may have saved the replica's buffers
        # (BatchNorm's statistics) for the backward pass that follows.
        slots = {name: slot for name, slot in _buffer_slots(self.model).items() if name in own}
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
        with _BatchNormStatistics() as statistics:
            result = run()
        # (batch_norm writes its statistics without bumping their version counters)
        touched = [n for n, t in tensors.items()
                   if (versions[n] is None and not torch.equal(t, saved[n]))
                   or (versions[n] is not None and _version(t) != versions[n])
                   or statistics.updated(t)]
        changed = [n for n in touched if not _exempt(tensors[n], statistics)]
        if changed:
            with torch.no_grad():  # leave the model as it was: PopTorch fails before running
                for name in touched:
                    tensors[name].copy_(saved[name])
            raise Error(BROADCAST_ERROR.format(names=", ".join(changed), replicas=self.replicas))
        self.own = {n for n, _ in self.model.named_buffers() if n in touched}
        # the other replicas start from the uploaded values, as replica 0 did
        self._copy_to_replicas({n: saved[n] for n in self.own})
        self.checked = True
        return result
