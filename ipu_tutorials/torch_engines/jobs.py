"""What each process of a lesson-16 run does: its rank's share of lesson 4's model under one of
torch.distributed's engines. Every job returns plain JSON data (lists, numbers, strings).

These run in other processes (processes.run), so they live in the package: a process can
import them, while it could not import a function defined in a notebook.
"""
from __future__ import annotations

import contextlib

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
# Imported here, not in the jobs: the fork server imports this module once, so every process
# starts with them loaded (importing them in four processes at once takes seconds).
from torch.distributed.fsdp import fully_shard
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe
from torch.nn.parallel import DistributedDataParallel

from ..tutorial.models import Network


def stage_modules(net: Network) -> list[nn.Module]:
    """Lesson 4's split of the network, one module per block B1..B4 (its four IPUs)."""
    return [nn.Sequential(net.layer1),                                   # B1: conv, pool, relu
            nn.Sequential(net.layer2),                                   # B2: conv, pool, relu
            nn.Sequential(nn.Flatten(), net.layer3, net.layer3_act),     # B3: (B, 320) -> (B, 256)
            nn.Sequential(net.layer4)]                                   # B4: (B, 256) -> (B, 10)


def boundary_shapes(micro_batch: int) -> list[tuple[int, ...]]:
    """The tensor shapes between the stages: input of B1, ..., output of B4 (on meta tensors)."""
    with torch.device("meta"):
        stages = stage_modules(Network())
        x = torch.empty(micro_batch, 1, 28, 28)
        shapes = [tuple(x.shape)]
        for stage in stages:
            x = stage(x)
            shapes.append(tuple(x.shape))
    return shapes


def pipeline(rank: int, world: int, device: torch.device, schedule: str, images: torch.Tensor,
             labels: torch.Tensor, micro_batches: int, steps: int, seed: int, lr: float) -> dict:
    """One stage of lesson 4's network under torch.distributed.pipelining, trained with AdamW.

    Returns:
        {"order": this stage's forward/backward order in the first step ("F0", "B0", ...),
         "losses": every micro-batch's loss (last stage only)}.
    """
    torch.manual_seed(seed)  # every rank builds the same network, then keeps its own block
    module = stage_modules(Network())[rank].to(device)
    shapes = boundary_shapes(len(images) // (steps * micro_batches))
    # Example tensors give torch the shapes up front (its "static" mode: no shapes exchanged);
    # they must require grad, or torch sends no gradient back across that boundary.
    example_in = torch.empty(shapes[rank], device=device, requires_grad=rank > 0)
    example_out = torch.empty(shapes[rank + 1], device=device, requires_grad=True)
    stage = PipelineStage(module, rank, world, device, input_args=example_in,
                          output_args=example_out)
    order = record_order(stage)
    kind = {"GPipe": ScheduleGPipe, "1F1B": Schedule1F1B}[schedule]
    runner = kind(stage, micro_batches, loss_fn=F.cross_entropy)  # step() divides gradients by M
    optimizer = torch.optim.AdamW(module.parameters(), lr=lr)
    losses: list[float] = []
    for x, y in zip(images.chunk(steps), labels.chunk(steps)):
        optimizer.zero_grad()
        step_losses: list[torch.Tensor] = []
        inputs = (x.to(device),) if rank == 0 else ()
        target = y.to(device) if rank == world - 1 else None
        runner.step(*inputs, target=target, losses=step_losses)
        optimizer.step()
        losses += [loss.item() for loss in step_losses]
    return {"order": order[:2 * micro_batches], "losses": losses}


def record_order(stage) -> list[str]:
    """Record the stage's forward ("F3") and backward ("B3") calls as the schedule makes them."""
    order: list[str] = []
    forward, backward = stage.forward_one_chunk, stage.backward_one_chunk

    def recorded_forward(chunk, *args, **kwargs):
        order.append(f"F{chunk}")
        return forward(chunk, *args, **kwargs)

    def recorded_backward(chunk, *args, **kwargs):
        order.append(f"B{chunk}")
        return backward(chunk, *args, **kwargs)

    stage.forward_one_chunk, stage.backward_one_chunk = recorded_forward, recorded_backward
    return order


def sharded_state(rank: int, world: int, device: torch.device, kind: str, images: torch.Tensor,
                  labels: torch.Tensor, steps: int, seed: int, lr: float) -> dict:
    """Data parallel AdamW over `world` ranks, its state sharded by ZeroRedundancyOptimizer
    ("zero": the state only, ZeRO stage 1) or by FSDP2's fully_shard ("fsdp": weights,
    gradients and state). Each step, each rank trains on its own quarter of the batch.

    Returns:
        {"bytes": this rank's {"weights", "gradients", "optimizer"} bytes after a step
         (optimizer: AdamW's two moments), "holds": {parameter: elements of its state here},
         "weights": the whole trained weights, flattened (rank 0 only)}.
    """
    torch.manual_seed(seed)
    net = Network().to(device)
    model, optimizer, local = _sharded(kind, net, lr, device)
    names = {id(p): name for name, p in net.named_parameters()}  # fully_shard's own parameters
    held: dict = {}
    for x, y in zip(images.chunk(steps), labels.chunk(steps)):
        mine = slice(rank * len(x) // world, (rank + 1) * len(x) // world)
        optimizer.zero_grad()
        F.cross_entropy(model(x[mine].to(device)), y[mine].to(device)).backward()
        held = {"weights": sum(_local(p).numel() * p.element_size() for p in net.parameters()),
                "gradients": sum(_local(p.grad).numel() * p.grad.element_size()
                                 for p in net.parameters() if p.grad is not None)}
        optimizer.step()
    state = local().state
    moments = {names[id(p)]: _local(s["exp_avg"]).numel() for p, s in state.items()}
    held["optimizer"] = sum(2 * 4 * n for n in moments.values())  # two float32 moments
    return {"bytes": held, "holds": moments, "weights": _whole_weights(net, rank)}


def _sharded(kind: str, net: Network, lr: float, device: torch.device):
    """(model to call, optimizer to step, the optimizer whose .state holds this rank's share)."""
    if kind == "zero":
        optimizer = ZeroRedundancyOptimizer(net.parameters(), optimizer_class=torch.optim.AdamW,
                                            lr=lr)
        return (DistributedDataParallel(net, device_ids=_device_ids(device)), optimizer,
                lambda: optimizer.optim)
    if kind == "fsdp":
        for layer in (net.layer1, net.layer2, net.layer3, net.layer4):
            fully_shard(layer)
        fully_shard(net)
        optimizer = torch.optim.AdamW(net.parameters(), lr=lr)
        return net, optimizer, lambda: optimizer
    raise ValueError(f"unknown sharding {kind!r}; choose 'zero' or 'fsdp'")


def _device_ids(device: torch.device) -> list[int] | None:
    """DDP's device_ids: the process's one GPU, or None on the CPU."""
    return [device.index] if device.type == "cuda" else None


def _local(tensor: torch.Tensor) -> torch.Tensor:
    """This rank's part of a tensor: a DTensor's local shard, else the tensor itself."""
    return tensor.to_local() if hasattr(tensor, "to_local") else tensor


def _whole_weights(net: nn.Module, rank: int) -> list[float] | None:
    """Every weight, whole and flattened, on rank 0 (sharded ones are gathered: all ranks call)."""
    whole = [p.full_tensor() if hasattr(p, "full_tensor") else p for p in net.parameters()]
    return torch.cat([w.detach().flatten().cpu() for w in whole]).tolist() if rank == 0 else None


def data_parallel(rank: int, world: int, device: torch.device, reduction: str,
                  images: torch.Tensor, labels: torch.Tensor, accumulation: int, seed: int,
                  lr: float) -> dict:
    """One SGD step of DistributedDataParallel: each rank accumulates `accumulation`
    micro-batches of its share (no_sync until the last), then the gradients are all-reduced.

    reduction "mean" is DDP's own all-reduce (the sum divided by the ranks; each rank's loss is
    a mean over its micro-batches); "sum" sums micro-batches and ranks (a communication hook).

    Returns:
        {"weights": the trained weights, flattened (rank 0), "reduced_bytes": gradient bytes
         each rank all-reduces per step}.
    """
    torch.manual_seed(seed)
    net = Network().to(device)
    model = DistributedDataParallel(net, device_ids=_device_ids(device))
    if reduction == "sum":
        model.register_comm_hook(None, sum_hook)
    elif reduction != "mean":
        raise ValueError(f"unknown reduction {reduction!r}; choose 'mean' or 'sum'")
    optimizer = torch.optim.SGD(net.parameters(), lr=lr)
    share = slice(rank * len(images) // world, (rank + 1) * len(images) // world)
    pairs = list(zip(images[share].chunk(accumulation), labels[share].chunk(accumulation)))
    for index, (x, y) in enumerate(pairs):
        # Accumulate locally and all-reduce once, after the last micro-batch: no_sync must
        # hold the forward too, which is where DDP decides whether the backward reduces.
        last = index == len(pairs) - 1
        with contextlib.nullcontext() if last else model.no_sync():
            loss = F.cross_entropy(model(x.to(device)), y.to(device))
            (loss if reduction == "sum" else loss / accumulation).backward()
    optimizer.step()
    reduced = sum(p.numel() * p.element_size() for p in net.parameters())
    return {"weights": _whole_weights(net, rank), "reduced_bytes": reduced}


def sum_hook(state, bucket):
    """A DDP communication hook that all-reduces a bucket of gradients without dividing by the
    ranks: ReductionType.Sum's counterpart (DDP's own hook averages)."""
    work = dist.all_reduce(bucket.buffer(), async_op=True)
    return work.get_future().then(lambda future: future.value()[0])


JOBS = {"pipeline": pipeline, "sharded_state": sharded_state, "data_parallel": data_parallel}
