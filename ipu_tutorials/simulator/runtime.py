"""Runtime: the numerics of one call, run on the host in PyTorch micro-batch by micro-batch.

Legend (RunSpec's): D device iterations, A gradient-accumulation micro-batches, R replicas,
G input groups (replicas fed different data; G = R unless replicas share inputs), mb
micro-batch size.
A call's input is read as `[D][A][G][mb]` and outputs come back in `[D][A][R]` order, as PopART
lays them out.
"""
from __future__ import annotations

import contextlib
from typing import Callable

import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

from ..errors import Error
from . import fp_exceptions, half, tracing
from .frozen_values import Replaying
from .losses import LossLocator
from .optimizer import DeviceOptimizer
from .replica_state import ReplicaState
from .mixed_types import MixedTypes
from .spec import (MIXED_DISPATCHER, MIXED_DOWNCAST, OUTPUT_ALL, OUTPUT_EVERY_N, OUTPUT_SUM,
                   RunSpec)


def micro_batch_size(tensors: list[torch.Tensor], spec: RunSpec) -> int:
    """The micro-batch implied by a call's inputs: the largest input's leading dimension over
    the micro-batches per call. As in PopTorch, each input is split on its own, so inputs may
    differ in leading dimension, but each must divide evenly.

    Reads the spec's counts only, so it also finds the micro-batch a spec is built with.
    """
    factor = spec.micro_batches_per_input
    sizes = sorted({t.shape[0] for t in tensors if t.dim() > 0}) or [factor]
    for size in sizes:
        if size == 0 or size % factor:
            raise Error(f"the input's leading dimension ({size}) must be a multiple of "
                        f"{spec.describe_factor()}, because each call feeds the device {factor} "
                        f"micro-batches. Use a batch of "
                        f"{factor} x micro-batch samples (poptorch.DataLoader does this for "
                        f"you), or change the options.")
    return sizes[-1] // factor


def _split(x, spec: RunSpec):
    if isinstance(x, torch.Tensor) and x.dim() > 0:
        return x.reshape(spec.device_iterations, spec.gradient_accumulation, spec.input_groups,
                         -1, *x.shape[1:])  # (D, A, G, this input's mb, ...)
    return x


def _precision(spec: RunSpec):
    """Float16 inputs with float32 weights: each op typed as PopTorch 3 types it, or (the
    deprecated downcast) run in float16 while the weights stay float32."""
    if spec.mixed_precision == MIXED_DOWNCAST:
        return torch.autocast("cpu", dtype=torch.float16)
    return MixedTypes() if spec.mixed_precision == MIXED_DISPATCHER else contextlib.nullcontext()


def _micro_batches(args: tuple, kwargs: dict, spec: RunSpec):
    """Yield (d, a, r, args, kwargs) for every micro-batch in [D][A][R] order."""
    leaves, tree = tree_flatten((args, kwargs))
    shaped = [_split(x, spec) for x in leaves]
    for d in range(spec.device_iterations):
        for a in range(spec.gradient_accumulation):
            for r in range(spec.replication_factor):
                g = spec.group_of(r)
                mb = [x[d, a, g] if x is not leaf else x for x, leaf in zip(shaped, leaves)]
                yield d, a, r, tree_unflatten(mb, tree)


class OutputCollector:
    """Keeps what the output mode returns and assembles it with the real shapes."""

    def __init__(self, spec: RunSpec):
        self.spec = spec
        self.kept: list[list[torch.Tensor]] = []
        self.sums: dict[int, list[torch.Tensor]] = {}
        self.tree = None

    def wants(self, d: int, a: int) -> bool:
        spec = self.spec
        if spec.output_mode in (OUTPUT_ALL, OUTPUT_SUM):
            return True
        if spec.output_mode == OUTPUT_EVERY_N:
            return (d + 1) % spec.output_return_period == 0
        return d == spec.device_iterations - 1 and a == spec.gradient_accumulation - 1

    def add(self, d: int, a: int, r: int, outputs) -> None:
        if not self.wants(d, a):
            return
        flat, self.tree = tree_flatten(outputs)
        flat = [_owned(t) for t in flat]
        if self.spec.output_mode == OUTPUT_SUM:
            running = self.sums.get(r)
            self.sums[r] = flat if running is None else [
                x + y if isinstance(y, torch.Tensor) else y for x, y in zip(running, flat)]
        else:
            self.kept.append(flat)

    def result(self):
        rows = [self.sums[r] for r in sorted(self.sums)] if self.sums else self.kept
        if self.tree is None:
            return None
        joined = [_join([row[i] for row in rows]) for i in range(len(rows[0]))]
        for t in joined:
            if isinstance(t, torch.Tensor):
                t.backward = _no_backward
        return tree_unflatten(joined, self.tree)


def _owned(value):
    """A copy of an output taken when it is produced: an output that is a buffer, a weight or
    an input must not change when the model's state changes later (PopTorch copies it to host)."""
    return value.detach().clone() if isinstance(value, torch.Tensor) else value


def _join(parts: list):
    if not isinstance(parts[0], torch.Tensor):
        return parts[-1]
    if len(parts) == 1:
        return parts[0]
    if parts[0].dim() == 0:
        return torch.stack(parts)
    return torch.cat(parts)


def _no_backward(*args, **kwargs):
    raise Error("backward() cannot be called explicitly on outputs of a PopTorch model. If "
                "you're using a trainingModel, the backwards pass is performed automatically "
                "when invoking the model. If you're using an inferenceModel, you should use a "
                "trainingModel instead. (A trainingModel call already ran the backward pass and "
                "the weight update on the device: remove the .backward() and optimizer.step() "
                "calls.)")


def _forward(model, replicas, r: int, args: tuple, kwargs: dict, frozen: tuple = ()):
    """Replica r's forward pass, against its own buffers when `replicas` (a ReplicaState) is
    given, with the tensor values read at trace time (`frozen`) replayed as the graph holds them."""
    with Replaying(frozen) if frozen else contextlib.nullcontext():
        if replicas is None:
            return model(*args, **kwargs)
        return replicas.forward(r, lambda: model(*args, **kwargs))


def run_inference(model: torch.nn.Module, args: tuple, kwargs: dict, spec: RunSpec,
                  replicas: ReplicaState | None = None, frozen: tuple = ()):
    collector = OutputCollector(spec)
    float16 = half.involves_half(model, (args, kwargs), mixed=spec.mixed_precision is not None)
    with (torch.no_grad(), tracing.running_on_ipu(), _precision(spec),
          half.emulation(float16, spec.rounding),
          fp_exceptions.checks(spec.floating_point_exceptions, model)):
        for d, a, r, (mb_args, mb_kwargs) in _micro_batches(args, kwargs, spec):
            collector.add(d, a, r, _forward(model, replicas, r, mb_args, mb_kwargs, frozen))
    return collector.result()


def run_training(model: torch.nn.Module, optimizer, args: tuple, kwargs: dict, spec: RunSpec,
                 loss: LossLocator, on_update: Callable[[dict, float], None] | None = None,
                 across_instances: Callable[[dict, int, bool], tuple[dict, int]] | None = None,
                 replicas: ReplicaState | None = None, frozen: tuple = (),
                 loss_scale: Callable[[], float] | None = None):
    """D weight updates, each from the gradients of A x R micro-batches.

    spec.mean_reduction averages the micro-batch gradients (else they are summed);
    spec.running_mean keeps that average as a running mean, which cannot overflow a float16
    accumulator. on_update(grads, scale), if given, sees each update's gradients before they
    are applied. `optimizer` is a DeviceOptimizer or a plain torch.optim optimizer.
    across_instances(grads, count, running), if given, returns the gradients and micro-batch
    count of the replicas of every instance (several host processes), as one Pod reduces them.
    replicas (a ReplicaState), if given, gives each replica its own buffers. frozen: the
    tensor values forward read at trace time (capture's Graph.value_reads), replayed.
    The loss is multiplied by spec.optimizer.loss_scaling, or, when the scale moves during
    the run (automatic loss scaling), by loss_scale(), asked again at each micro-batch.
    """
    loss_scale = loss_scale or (lambda: spec.optimizer.loss_scaling)
    collector = OutputCollector(spec)
    params = [p for group in optimizer.param_groups for p in group["params"] if p.requires_grad]
    for p in params:  # the IPU's accumulators start at zero: gradients left on the host
        p.grad = None  # (e.g. by a CPU training loop before wrapping) never join the update
    device = isinstance(optimizer, DeviceOptimizer)
    gradients = _Gradients(params, optimizer._accumulator_type if device else None,
                           running=spec.mean_reduction and spec.running_mean)
    last = (spec.gradient_accumulation - 1, spec.replication_factor - 1)
    float16 = half.involves_half(model, (args, kwargs), optimizer, spec.mixed_precision is not None)
    with (tracing.running_on_ipu(), half.emulation(float16, spec.rounding),
          fp_exceptions.checks(spec.floating_point_exceptions, model) as start_backward):
        for d, a, r, (mb_args, mb_kwargs) in _micro_batches(args, kwargs, spec):
            with _precision(spec), loss.collecting() as computed:
                outputs = _forward(model, replicas, r, mb_args, mb_kwargs, frozen)
            final = loss.pick(outputs, computed)
            start_backward()
            # asked each micro-batch: on_update may change it (automatic loss scaling)
            loss_scaling = float(loss_scale())
            _backward(final * loss_scaling if loss_scaling != 1.0 else final)
            gradients.add()
            collector.add(d, a, r, outputs)
            if (a, r) == last:
                _reduce_and_update(optimizer, params, gradients, spec, across_instances,
                                   on_update, loss_scaling)
    return collector.result()


def _reduce_and_update(optimizer, params: list, gradients: "_Gradients", spec: RunSpec,
                       across_instances, on_update, loss_scaling: float) -> None:
    """One weight update from the accumulated gradients: reduced over every instance when
    several share the run, averaged (Mean) or summed, unscaled, then applied."""
    device = isinstance(optimizer, DeviceOptimizer)
    grads, count = gradients.take()
    if across_instances is not None:
        grads, count = across_instances(grads, count, gradients.running)
    divisor = count if spec.mean_reduction and not gradients.running else 1
    _update(optimizer, device, params, grads, 1.0 / (loss_scaling * divisor), on_update,
            spec.rounding)


def _backward(loss: torch.Tensor) -> None:
    if not loss.requires_grad:
        return  # no trainable weight feeds the loss (frozen or eval-only layers): no gradient
    if loss.dim() == 0:
        loss.backward()
    else:  # identity_loss(..., reduction="none"): a gradient of ones
        loss.backward(torch.ones_like(loss))


class _Gradients:
    """The micro-batch gradients of one update: summed (Post) or a running mean (Running).

    Autograd sums into .grad by itself; the gradients move into accumulators of their own only
    for a running mean or an accumulation type other than the weights' type.
    """

    def __init__(self, params: list, accum_type, running: bool):
        self.params, self.accum_type, self.running = params, accum_type, running
        self.own = running or any(accum_type is not None and p.dtype != accum_type for p in params)
        self.store: dict = {}
        self.count = 0

    def add(self) -> None:
        self.count += 1
        if not self.own:
            return
        for p in self.params:
            if p.grad is None:
                continue
            grad, previous = p.grad.to(self.accum_type or p.grad.dtype), self.store.get(p)
            if previous is None:
                self.store[p] = grad
            elif self.running:
                self.store[p] = previous + (grad - previous) / self.count
            else:
                self.store[p] = previous + grad
            p.grad = None

    def take(self) -> tuple[dict, int]:
        """The accumulated gradients and how many micro-batches they hold; then start afresh."""
        grads = self.store if self.own else {p: p.grad for p in self.params if p.grad is not None}
        count, self.store, self.count = self.count, {}, 0
        return grads, count


def _update(optimizer, device: bool, params, grads: dict, scale: float, on_update,
            rounding: half.Rounding) -> None:
    if on_update is not None:
        on_update(grads, scale)
    if device:
        with half.outside_emulation(rounding):  # float32 arithmetic, rounded by the optimizer
            optimizer._apply_gradients(grads, scale)
    else:  # a plain torch.optim optimizer
        for p, g in grads.items():
            p.grad = (g * scale).to(p.dtype)
        optimizer.step()
    for p in params:
        p.grad = None
