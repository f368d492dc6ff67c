"""Runtime: the numerics of one call, run on the host in PyTorch micro-batch by micro-batch.

Legend: D device iterations, A gradient-accumulation micro-batches, R replicas, G input
groups (replicas fed different data; G = R unless replicas share inputs), mb micro-batch size.
A call's input is read as [D][A][G][mb] and outputs come back in [D][A][R] order, as PopART
lays them out.
"""
from __future__ import annotations

import contextlib
import dataclasses

import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

from ..errors import Error
from . import half, tracing
from .config import OUTPUT_ALL, OUTPUT_EVERY_N, OUTPUT_FINAL, OUTPUT_SUM

MIXED_DOWNCAST, MIXED_UPCAST = "downcast", "upcast"  # float16 inputs meeting float32 weights


@dataclasses.dataclass(frozen=True)
class Batching:
    micro_batch: int
    device_iterations: int = 1
    accumulation: int = 1
    replicas: int = 1
    input_group_size: int = 1  # replicas that share one slice of the input
    orthogonal_groups: bool = False  # replicas r, r+G, r+2G... share (else consecutive ones do)
    output_mode: str = OUTPUT_FINAL
    output_period: int = 1
    mixed: str | None = None  # MIXED_DOWNCAST, MIXED_UPCAST or None
    rounding: half.Rounding = half.Rounding()  # how float16 results round (half.py)

    @property
    def input_groups(self) -> int:
        return self.replicas // self.input_group_size

    @property
    def factor(self) -> int:
        """Micro-batches each call's input holds."""
        return self.device_iterations * self.accumulation * self.input_groups

    def group_of(self, replica: int) -> int:
        if self.orthogonal_groups:
            return replica % self.input_groups
        return replica // self.input_group_size


def describe_factor(b: Batching) -> str:
    groups = "" if b.input_group_size == 1 else f" / input group size {b.input_group_size}"
    return (f"deviceIterations ({b.device_iterations}) x gradientAccumulation ({b.accumulation})"
            f" x replicationFactor ({b.replicas}){groups} = {b.factor}")


def micro_batch_size(tensors: list[torch.Tensor], b: Batching) -> int:
    """The micro-batch implied by a call's inputs; every input must agree and divide evenly."""
    factor = b.factor
    sizes = {t.shape[0] for t in tensors if t.dim() > 0}
    if len(sizes) > 1:
        raise Error(f"the inputs disagree on their batch size {sorted(sizes)}; every batched "
                    f"input of a call needs the same leading dimension")
    size = sizes.pop() if sizes else factor
    if size == 0 or size % factor:
        raise Error(f"the input's leading dimension ({size}) must be a multiple of "
                    f"{describe_factor(b)}, because each call feeds the device {factor} "
                    f"micro-batches. Use a batch of "
                    f"{factor} x micro-batch samples (poptorch.DataLoader does this for you), or "
                    f"change the options.")
    return size // factor


def _split(x, b: Batching):
    if isinstance(x, torch.Tensor) and x.dim() > 0:
        return x.reshape(b.device_iterations, b.accumulation, b.input_groups, b.micro_batch,
                         *x.shape[1:])
    return x


def _precision(b: Batching):
    """Float16 inputs with float32 weights: ops run in float16 while weights stay float32."""
    if b.mixed == MIXED_DOWNCAST:
        return torch.autocast("cpu", dtype=torch.float16)
    return contextlib.nullcontext()


def _micro_batches(args: tuple, kwargs: dict, b: Batching):
    """Yield (d, a, r, args, kwargs) for every micro-batch in [D][A][R] order."""
    leaves, spec = tree_flatten((args, kwargs))
    if b.mixed == MIXED_UPCAST:
        leaves = [x.float() if isinstance(x, torch.Tensor) and x.dtype == torch.float16 else x
                  for x in leaves]
    shaped = [_split(x, b) for x in leaves]
    for d in range(b.device_iterations):
        for a in range(b.accumulation):
            for r in range(b.replicas):
                g = b.group_of(r)
                mb = [x[d, a, g] if x is not leaf else x for x, leaf in zip(shaped, leaves)]
                yield d, a, r, tree_unflatten(mb, spec)


class OutputCollector:
    """Keeps what the output mode returns and assembles it with the real shapes."""

    def __init__(self, b: Batching):
        self.b = b
        self.kept: list[list[torch.Tensor]] = []
        self.sums: dict[int, list[torch.Tensor]] = {}
        self.spec = None

    def wants(self, d: int, a: int) -> bool:
        b = self.b
        if b.output_mode == OUTPUT_ALL:
            return True
        if b.output_mode == OUTPUT_EVERY_N:
            return (d + 1) % b.output_period == 0
        if b.output_mode == OUTPUT_SUM:
            return True
        return d == b.device_iterations - 1 and a == b.accumulation - 1

    def add(self, d: int, a: int, r: int, outputs) -> None:
        if not self.wants(d, a):
            return
        flat, self.spec = tree_flatten(outputs)
        flat = [t.detach() if isinstance(t, torch.Tensor) else t for t in flat]
        if self.b.output_mode == OUTPUT_SUM:
            running = self.sums.get(r)
            self.sums[r] = flat if running is None else [
                x + y if isinstance(y, torch.Tensor) else y for x, y in zip(running, flat)]
        else:
            self.kept.append(flat)

    def result(self):
        rows = [self.sums[r] for r in sorted(self.sums)] if self.sums else self.kept
        if self.spec is None:
            return None
        joined = [_join([row[i] for row in rows]) for i in range(len(rows[0]))]
        for t in joined:
            if isinstance(t, torch.Tensor):
                t.backward = _no_backward
        return tree_unflatten(joined, self.spec)


def _join(parts: list):
    if not isinstance(parts[0], torch.Tensor):
        return parts[-1]
    if len(parts) == 1:
        return parts[0]
    if parts[0].dim() == 0:
        return torch.stack(parts)
    return torch.cat(parts)


def _no_backward(*args, **kwargs):
    raise Error("backward() cannot be called on the outputs of a PopTorch model: a trainingModel "
                "already ran the backward pass and the weight update on the device when you "
                "called it. Remove the .backward() and optimizer.step() calls; for inference "
                "only, use poptorch.inferenceModel.")


def run_inference(model: torch.nn.Module, args: tuple, kwargs: dict, b: Batching):
    collector = OutputCollector(b)
    float16 = half.involves_half(model, (args, kwargs), mixed=b.mixed == MIXED_DOWNCAST)
    with torch.no_grad(), tracing.running_on_ipu(), _precision(b), \
            half.emulation(float16, b.rounding):
        for d, a, r, (mb_args, mb_kwargs) in _micro_batches(args, kwargs, b):
            collector.add(d, a, r, model(*mb_args, **mb_kwargs))
    return collector.result()


def run_training(model: torch.nn.Module, optimizer, args: tuple, kwargs: dict, b: Batching,
                 loss_output: int, mean_reduction: bool, running_mean: bool = False,
                 on_update=None):
    """D weight updates, each from the gradients of A x R micro-batches.

    mean_reduction averages the micro-batch gradients (else they are summed); running_mean
    keeps that average as a running mean, which cannot overflow a float16 accumulator.
    on_update(grads, scale), if given, sees each update's gradients before they are applied.
    """
    collector = OutputCollector(b)
    params = [p for group in optimizer.param_groups for p in group["params"] if p.requires_grad]
    loss_scaling = float(getattr(optimizer, "loss_scaling", 1.0))
    gradients = _Gradients(params, getattr(optimizer, "accum_type", None),
                           running=mean_reduction and running_mean)
    last = (b.accumulation - 1, b.replicas - 1)
    float16 = half.involves_half(model, (args, kwargs), optimizer, b.mixed == MIXED_DOWNCAST)
    with tracing.running_on_ipu(), half.emulation(float16, b.rounding):
        for d, a, r, (mb_args, mb_kwargs) in _micro_batches(args, kwargs, b):
            with _precision(b):
                outputs = model(*mb_args, **mb_kwargs)
            loss = tree_flatten(outputs)[0][loss_output]
            _backward(loss * loss_scaling if loss_scaling != 1.0 else loss)
            gradients.add()
            collector.add(d, a, r, outputs)
            if (a, r) == last:
                grads, count = gradients.take()
                divisor = count if mean_reduction and not gradients.running else 1
                _update(optimizer, params, grads, 1.0 / (loss_scaling * divisor), on_update)
    return collector.result()


def _backward(loss: torch.Tensor) -> None:
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


def _update(optimizer, params, grads: dict, scale: float, on_update) -> None:
    if on_update is not None:
        on_update(grads, scale)
    if hasattr(optimizer, "apply_gradients"):
        optimizer.apply_gradients(grads, scale)
    else:  # a plain torch.optim optimizer
        for p, g in grads.items():
            p.grad = (g * scale).to(p.dtype)
        optimizer.step()
    for p in params:
        p.grad = None
