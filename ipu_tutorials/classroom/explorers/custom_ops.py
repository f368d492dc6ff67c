"""The MultiConv explorer: parallel convolution branches planned one after another or together.

Every figure comes from compiling a real branchy model with poptorch.inferenceModel: with
`poptorch.MultiConv()` around its branches the simulator's Parallel plan runs them side by
side (the group takes as long as its slowest member); without, one after another.
"""
from __future__ import annotations

import functools

import torch
import torch.nn as nn

from ... import poptorch
from ...profiling import style
from .widgets import Explorer, choice, slider

KERNELS = (1, 3, 5, 7)  # one branch per kernel size, as in an Inception block
MICRO_BATCH, DEVICE_ITERATIONS, SIZE = 8, 16, 32


class Branches(nn.Module):
    """`branches` convolutions of the same input, concatenated: an Inception-style block."""

    def __init__(self, branches: int = 4, channels: int = 32, multiconv: bool = True):
        super().__init__()
        if not 1 <= branches <= len(KERNELS):
            raise ValueError(f"branches must be 1 to {len(KERNELS)}, got {branches}")
        self.convs = nn.ModuleList(nn.Conv2d(channels, channels, k, padding=k // 2)
                                   for k in KERNELS[:branches])
        self.multiconv = multiconv

    def forward(self, x):  # x: (B, C, H, W)
        if self.multiconv:
            with poptorch.MultiConv():
                outs = [conv(x) for conv in self.convs]
        else:
            outs = [conv(x) for conv in self.convs]
        return torch.cat(outs, dim=1)  # (B, branches x C, H, W)


@functools.lru_cache(maxsize=64)
def compute_seconds(branches: int, channels: int, multiconv: bool) -> float:
    """Simulated IPU compute time of one call (16 device iterations of 8 images)."""
    with torch.device("meta"):
        model = Branches(branches, channels, multiconv)
    opts = poptorch.Options().deviceIterations(DEVICE_ITERATIONS).showCompilationProgressBar(False)
    inference = poptorch.inferenceModel(model, opts)
    inference.compile(torch.zeros(MICRO_BATCH * DEVICE_ITERATIONS, channels, SIZE, SIZE,
                                  device="meta"))
    seconds = inference.plan.breakdown()["IPU compute"]
    inference.destroy()
    return seconds


def describe(branches: int, channels: int, multiconv: bool) -> str:
    alone = compute_seconds(branches, channels, False)
    together = compute_seconds(branches, channels, True)
    chosen = together if multiconv else alone
    return (f"{branches} branch(es) of {channels} channels, kernels "
            f"{', '.join(f'{k}x{k}' for k in KERNELS[:branches])}: IPU compute "
            f"<b>{chosen * 1e6:,.1f} µs</b> per call {'with' if multiconv else 'without'} "
            f"MultiConv ({alone * 1e6:,.1f} µs one after another, {together * 1e6:,.1f} µs "
            f"planned together: {alone / together:.2f}x).")


def draw(channels: int, branches: int, multiconv: bool, figure) -> None:
    ax = figure.subplots()
    counts = range(1, len(KERNELS) + 1)
    for offset, together, colour in ((-0.2, False, "#90a4ae"), (0.2, True, "#1565c0")):
        heights = [compute_seconds(n, channels, together) * 1e6 for n in counts]
        edges = ["black" if (n, together) == (branches, multiconv) else colour for n in counts]
        ax.bar([n + offset for n in counts], heights, width=0.4, color=colour, edgecolor=edges,
               linewidth=2, label="with MultiConv" if together else "one after another")
    ax.set(xlabel="branches", ylabel="IPU compute per call (µs, simulated)", xticks=list(counts),
           title=f"Convolution branches of {channels} channels")
    style.readable(ax)
    figure.tight_layout()
    style.legend_below(ax)  # under the axes: a tall bar never meets it
    figure.tight_layout()


def multiconv_explorer(branches: int = 3, channels: int = 32, multiconv: bool = True) -> Explorer:
    """Choose the branches, their width and MultiConv; see the simulated compute time."""
    import ipywidgets as widgets

    controls = {"branches": slider("branches", branches, 1, len(KERNELS)),
                "channels": choice("channels", (16, 32, 64, 128), channels),
                "multiconv": widgets.Checkbox(value=multiconv, description="MultiConv")}

    def compute(branches, channels, multiconv):
        return {"text": describe(branches, channels, multiconv), "branches": branches,
                "channels": channels, "multiconv": multiconv}

    return Explorer("MultiConv explorer: convolution branches planned together", controls,
                    compute, lambda r, figure: draw(r["channels"], r["branches"], r["multiconv"],
                                                    figure), figsize=(8, 3.4))
