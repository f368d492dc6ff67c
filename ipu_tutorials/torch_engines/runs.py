"""Lesson 16's runs: each starts four processes, trains lesson 4's model with one of
torch.distributed's engines, stops them, and returns what the notebook prints.

`seconds` is wall time measured on this machine around the whole run (starting the processes
included): a CPU's time, not a GPU's, and nothing the simulator predicts.
"""
from __future__ import annotations

import dataclasses
import time

import torch

from ..simulator.schedule import Action
from ..tutorial.loops import BLOCKS
from . import processes
from .schedules import check_micro_batches, parse_order

STAGES = len(BLOCKS)  # one process per block, as lesson 4 puts one block on each of 4 IPUs


@dataclasses.dataclass(frozen=True)
class PipelineRun:
    """A pipelined run: each stage's order in the first step, every micro-batch's loss."""

    schedule: str
    orders: list[list[Action]]
    losses: list[float]
    seconds: float


@dataclasses.dataclass(frozen=True)
class ShardedRun:
    """A data-parallel run with sharded optimizer state: what each rank held, and the weights."""

    kind: str
    bytes: list[dict[str, int]]  # per rank: weights, gradients, optimizer (AdamW's moments)
    holds: list[dict[str, int]]  # per rank: parameter name -> its state's elements held here
    weights: torch.Tensor  # every trained weight, flattened
    seconds: float


@dataclasses.dataclass(frozen=True)
class DataParallelRun:
    """One DDP step: the trained weights and the gradient bytes each rank all-reduced."""

    reduction: str
    weights: torch.Tensor
    reduced_bytes: int
    seconds: float


def _check_batches(images: torch.Tensor, labels: torch.Tensor, parts: int, what: str) -> None:
    if len(images) != len(labels) or len(images) == 0 or len(images) % parts:
        raise ValueError(f"{len(images)} images and {len(labels)} labels do not split into "
                         f"{what}: give equal counts, a multiple of {parts}")


def run_pipeline(schedule: str, images: torch.Tensor, labels: torch.Tensor,
                 micro_batches: int = 10, steps: int = 1, seed: int = 0, lr: float = 1e-3,
                 device: str = "cpu", port: int | None = None,
                 timeout: float = processes.TIMEOUT) -> PipelineRun:
    """Train lesson 4's network with torch.distributed.pipelining, one process per block.

    Args:
        schedule: "GPipe" (ScheduleGPipe) or "1F1B" (Schedule1F1B).
        images, labels: `steps` steps of `micro_batches` equal micro-batches, in order.
        seed: the seed every process builds the network from (torch.manual_seed).
        lr: AdamW's learning rate (lesson 4's 0.001).
        device: "cpu" (gloo) or "cuda" (nccl, one GPU per process).
        port: the rendezvous port on 127.0.0.1; None picks a free one.
    Raises:
        ValueError: counts torch refuses, data that do not split, or too few GPUs.
        processes.EngineError: a taken port, a failed process or a run over `timeout`.
    """
    check_micro_batches(schedule, STAGES, micro_batches)
    _check_batches(images, labels, steps * micro_batches, f"{steps} step(s) of {micro_batches} "
                                                          f"equal micro-batches")
    started = time.perf_counter()
    results = processes.run("pipeline", dict(schedule=schedule, images=images, labels=labels,
                                             micro_batches=micro_batches, steps=steps, seed=seed,
                                             lr=lr), STAGES, device, port, timeout)
    orders = [parse_order(result["order"], stage) for stage, result in enumerate(results)]
    return PipelineRun(schedule, orders, results[-1]["losses"], time.perf_counter() - started)


def run_sharded_state(kind: str, images: torch.Tensor, labels: torch.Tensor, steps: int = 1,
                      seed: int = 0, lr: float = 1e-3, device: str = "cpu",
                      port: int | None = None, timeout: float = processes.TIMEOUT) -> ShardedRun:
    """Train lesson 4's network data parallel over four processes with AdamW, its state
    sharded by ZeroRedundancyOptimizer (kind "zero") or FSDP2's fully_shard ("fsdp").

    Each step's images split into four equal shares, one per process. Raises as run_pipeline.
    """
    if kind not in ("zero", "fsdp"):
        raise ValueError(f"unknown sharding {kind!r}; choose 'zero' or 'fsdp'")
    _check_batches(images, labels, steps * STAGES, f"{steps} step(s) of {STAGES} equal shares")
    started = time.perf_counter()
    results = processes.run("sharded_state", dict(kind=kind, images=images, labels=labels,
                                                  steps=steps, seed=seed, lr=lr),
                            STAGES, device, port, timeout)
    return ShardedRun(kind, [r["bytes"] for r in results], [r["holds"] for r in results],
                      torch.tensor(results[0]["weights"]), time.perf_counter() - started)


def run_data_parallel(reduction: str, images: torch.Tensor, labels: torch.Tensor,
                      accumulation: int, seed: int = 0, lr: float = 0.05, device: str = "cpu",
                      port: int | None = None,
                      timeout: float = processes.TIMEOUT) -> DataParallelRun:
    """One SGD step of DistributedDataParallel over four processes, each accumulating
    `accumulation` micro-batches of its quarter of the images; reduction "mean" (DDP's own)
    or "sum" (a communication hook). Raises as run_pipeline.
    """
    if reduction not in ("mean", "sum"):
        raise ValueError(f"unknown reduction {reduction!r}; choose 'mean' or 'sum'")
    _check_batches(images, labels, STAGES * accumulation,
                   f"{STAGES} shares of {accumulation} equal micro-batches")
    started = time.perf_counter()
    results = processes.run("data_parallel", dict(reduction=reduction, images=images,
                                                  labels=labels, accumulation=accumulation,
                                                  seed=seed, lr=lr), STAGES, device, port, timeout)
    return DataParallelRun(reduction, torch.tensor(results[0]["weights"]),
                           results[0]["reduced_bytes"], time.perf_counter() - started)


def flat_weights(module: torch.nn.Module) -> torch.Tensor:
    """A module's weights in one flat float32 tensor, in the order the runs return theirs."""
    return torch.cat([p.detach().flatten().float().cpu() for p in module.parameters()])
