"""Pipeline depth vs replicas on a Pod16: memory per IPU and throughput at one global batch.

Sixteen IPUs can hold 1 replica of a 16-stage pipeline, 16 replicas of a 1-IPU model, or
anything between. Every point comes from compiling a real transformer (on the meta device) with
poptorch.trainingModel: replicationFactor(16 // depth), gradient accumulation chosen so that
every configuration updates the weights from the same GLOBAL_BATCH sequences.
"""
from __future__ import annotations

import dataclasses
import functools

import torch

from ... import poptorch
from ...errors import OutOfMemoryError
from ...profiling import style
from ...simulator.memory import format_bytes
from ...tutorial.models import TransformerLM, split_layers
from .memory import even_split
from .widgets import FIGURE_INCHES, Explorer, choice

POD_IPUS, MICRO_BATCH, GLOBAL_BATCH, CONTEXT = 16, 4, 512, 128
DEPTHS = (1, 2, 4, 8, 16)
# name -> (width, heads); 16 layers (one per IPU at depth 16), vocabulary 32,000
PRESETS = {"20M": (256, 4), "40M": (384, 6), "85M": (512, 8)}


@functools.lru_cache(maxsize=4)
def _model(size: str) -> TransformerLM:
    if size not in PRESETS:
        raise ValueError(f"unknown model size {size!r}; choose one of {', '.join(PRESETS)}")
    width, heads = PRESETS[size]
    with torch.device("meta"):
        return TransformerLM(width=width, depth=16, heads=heads, context=CONTEXT,
                             recompute_checkpoint_every_layer=True)


@dataclasses.dataclass(frozen=True)
class PodSplit:
    """One way to use the Pod: `depth` IPUs per replica, `replicas` replicas."""

    depth: int
    replicas: int
    accumulation: int
    fullest_bytes: int  # memory of the fullest IPU
    capacity_bytes: int
    samples_per_second: float  # simulated, whole Pod

    @property
    def fits(self) -> bool:
        return self.fullest_bytes <= self.capacity_bytes


@functools.lru_cache(maxsize=64)
def pod_split(size: str = "40M", depth: int = 4, offload: bool = False) -> PodSplit:
    """Compile `size` as `depth`-IPU pipelines replicated over the rest of a Pod16."""
    if depth not in DEPTHS:
        raise ValueError(f"pipeline depth must divide the {POD_IPUS} IPUs: one of {DEPTHS}, "
                         f"got {depth}")
    model = _model(size)
    split_layers(model, even_split(len(model.layers), depth))
    replicas = POD_IPUS // depth
    accumulation = GLOBAL_BATCH // (MICRO_BATCH * replicas)
    opts = poptorch.Options().replicationFactor(replicas).showCompilationProgressBar(False)
    opts.Training.gradientAccumulation(accumulation)
    opts.TensorLocations.setOptimizerLocation(
        poptorch.TensorLocationSettings().useOnChipStorage(not offload))
    training = poptorch.trainingModel(model, opts, poptorch.optim.AdamW(model.parameters()))
    tokens = torch.zeros(GLOBAL_BATCH, CONTEXT, dtype=torch.long, device="meta")
    try:
        training.compile(tokens, tokens)
        plan, speed = training.plan, training.plan.samples_per_second
        memory = plan.memory
    except OutOfMemoryError as error:
        memory, speed = error.plan, 0.0
    finally:
        training.destroy()
    fullest = max(memory.ipus, key=lambda m: m.total)
    return PodSplit(depth, replicas, accumulation, fullest.total, fullest.capacity, speed)


def describe(splits: list[PodSplit], depth: int, size: str) -> str:
    chosen = next(s for s in splits if s.depth == depth)
    fitting = [s for s in splits if s.fits]
    head = (f"{size} on {POD_IPUS} IPUs as {chosen.replicas} replica(s) x {chosen.depth} "
            f"IPU(s), accumulation {chosen.accumulation} (global batch {GLOBAL_BATCH}): ")
    if not chosen.fits:
        return head + (f"<b style='color:#c62828'>out of memory</b>: the fullest IPU needs "
                       f"{format_bytes(chosen.fullest_bytes)} of "
                       f"{format_bytes(chosen.capacity_bytes)}")
    best = max(fitting, key=lambda s: s.samples_per_second)
    return head + (f"<b>fits</b> ({format_bytes(chosen.fullest_bytes)} on the fullest IPU), "
                   f"{chosen.samples_per_second:,.0f} sequences/s simulated; the fastest split "
                   f"that fits is {best.replicas} x {best.depth}")


def draw(splits: list[PodSplit], depth: int, figure) -> None:
    memory_axis, speed_axis = figure.subplots(1, 2)
    labels = [f"{s.replicas}x{s.depth}" for s in splits]
    colours = ["#1565c0" if s.depth == depth else "#90a4ae" for s in splits]
    memory_axis.bar(labels, [s.fullest_bytes / 2**20 for s in splits], color=colours)
    memory_axis.axhline(splits[0].capacity_bytes / 2**20, color="#c62828", linestyle="--",
                        label="IPU memory")
    memory_axis.set(xlabel="replicas x IPUs per replica", ylabel="fullest IPU (MiB)",
                    title="memory")
    speed_axis.bar(labels, [s.samples_per_second for s in splits], color=colours)
    speed_axis.set(xlabel="replicas x IPUs per replica", ylabel="sequences/s (simulated)",
                   title="throughput (0 = does not fit)")
    for ax in (memory_axis, speed_axis):
        style.readable(ax)
    figure.tight_layout()
    style.legend_below(memory_axis)  # under the axes: a tall bar never meets it
    figure.tight_layout()


def replication_explorer(size: str = "40M", depth: int = 4, offload: bool = False) -> Explorer:
    """Choose how a Pod16 is split between pipeline depth and replicas; see memory and speed."""
    import ipywidgets as widgets

    controls = {"size": choice("model", list(PRESETS), size),
                "depth": choice("IPUs per replica", list(DEPTHS), depth),
                "offload": widgets.Checkbox(value=offload, description="optimizer state off chip")}

    def compute(size, depth, offload):
        splits = [pod_split(size, d, offload) for d in DEPTHS]
        return {"splits": splits, "depth": depth, "text": describe(splits, depth, size)}

    return Explorer("Replication explorer: pipeline depth x replicas on a Pod16", controls, compute,
                    lambda result, figure: draw(result["splits"], result["depth"], figure),
                    figsize=(FIGURE_INCHES, 3.8))
