"""The memory planner: model size, IPUs, optimizer, offload, fp16 -> per-IPU memory vs capacity.

Each plan comes from compiling a real transformer, built on the meta device, with
poptorch.trainingModel: the bars are the runtime's own memory plan.
"""
from __future__ import annotations

import functools

import torch

from ... import poptorch
from ...errors import OutOfMemoryError
from ...profiling.plots import plot_memory
from ...simulator.memory import MemoryPlan
from ...simulator.rules import min_gradient_accumulation
from ...simulator.units import format_bytes
from ...tutorial.models import TransformerLM, parameter_count, split_layers
from ..plans import plan_on_meta
from .widgets import FIGURE_INCHES, Explorer, choice

# name -> (width, depth, heads); vocabulary 32,000 and context 128 throughout
PRESETS = {"125M": (768, 12, 12), "350M": (1024, 24, 16), "760M": (1536, 24, 16),
           "1.3B": (2048, 24, 16), "2.7B": (2560, 32, 32)}
# With float16 weights the gradients accumulate in float16 too; optimizer state stays float32.
OPTIMIZERS = {
    "SGD": lambda params, accum: poptorch.optim.SGD(params, lr=0.01, accum_type=accum),
    "SGD + momentum": lambda params, accum: poptorch.optim.SGD(params, lr=0.01, momentum=0.9,
                                                               accum_type=accum),
    "AdamW": lambda params, accum: poptorch.optim.AdamW(params, accum_type=accum),
    "LAMB": lambda params, accum: poptorch.optim.LAMB(params, accum_type=accum),
}
MICRO_BATCH, CONTEXT = 4, 128
MIN_ACCUMULATION = 8  # enough micro-batches for the pipeline to run mostly full


@functools.lru_cache(maxsize=8)
def _model(size: str, half: bool) -> TransformerLM:
    width, depth, heads = PRESETS[size]
    with torch.device("meta"):
        model = TransformerLM(width=width, depth=depth, heads=heads, context=CONTEXT,
                              recompute_checkpoint_every_layer=True)
    return model.half() if half else model


def even_split(layers: int, ipus: int) -> list[int]:
    """Layers per IPU as even as possible; the extra layers go to the middle IPUs first, since
    the first IPU also holds the embedding and the last the output layer."""
    counts = [layers // ipus] * ipus
    order = list(range(1, ipus - 1)) + [0, ipus - 1] if ipus > 2 else list(range(ipus))
    for i in order[:layers % ipus]:
        counts[i] += 1
    return counts


def plan_memory_for(size: str = "1.3B", ipus: int = 4, optimizer: str = "AdamW",
                    offload: bool = False, half: bool = False) -> MemoryPlan:
    """The per-IPU memory plan of one training configuration, whether or not it fits."""
    if size not in PRESETS:
        raise ValueError(f"unknown model size {size!r}; choose one of {', '.join(PRESETS)}")
    model = _model(size, half)
    split_layers(model, even_split(len(model.layers), ipus))
    accumulation = max(min_gradient_accumulation(ipus), MIN_ACCUMULATION)
    opts = poptorch.Options()
    opts.Training.gradientAccumulation(accumulation)
    opts.TensorLocations.setOptimizerLocation(
        poptorch.TensorLocationSettings().useOnChipStorage(not offload))
    accum = torch.float16 if half else torch.float32
    tokens = torch.zeros(MICRO_BATCH * accumulation, CONTEXT, dtype=torch.long, device="meta")
    try:
        return plan_on_meta(model, opts, OPTIMIZERS[optimizer](model.parameters(), accum), tokens,
                            tokens).memory
    except OutOfMemoryError as error:  # the planner shows plans that do not fit, too
        return error.plan


def describe(memory: MemoryPlan, size: str, half: bool) -> str:
    over = [m for m in memory.ipus if not m.fits]
    params = parameter_count(_model(size, half))
    head = f"{params / 1e9:.2f}B parameters on {len(memory.ipus)} IPU(s): "
    if not over:
        fullest = max(memory.ipus, key=lambda m: m.utilisation)
        return head + f"<b>fits</b>; the fullest is IPU {fullest.ipu} at {fullest.utilisation:.0%}"
    worst = max(over, key=lambda m: m.total - m.capacity)
    return head + (f"<b style='color:#c62828'>out of memory</b> on {len(over)} IPU(s); IPU "
                   f"{worst.ipu} is {format_bytes(worst.total - worst.capacity)} over")


def memory_planner(size: str = "1.3B", ipus: int = 4, optimizer: str = "AdamW",
                   offload: bool = False, half: bool = False) -> Explorer:
    """Per-IPU memory against capacity as the model, IPUs, optimizer and precision change."""
    import ipywidgets as widgets

    controls = {
        "size": choice("model", list(PRESETS), size),
        "ipus": choice("IPUs", [1, 2, 4, 8, 16], ipus),
        "optimizer": choice("optimizer", list(OPTIMIZERS), optimizer),
        "offload": widgets.Checkbox(value=offload, description="optimizer state off chip"),
        "half": widgets.Checkbox(value=half, description="float16 weights"),
    }

    def compute(size, ipus, optimizer, offload, half):
        memory = plan_memory_for(size, ipus, optimizer, offload, half)
        return {"memory": memory, "text": describe(memory, size, half)}

    def draw(result, figure):
        plot_memory(result["memory"].ipus, ax=figure.subplots())

    return Explorer("Memory planner", controls, compute, draw, figsize=(FIGURE_INCHES, 4.5))
