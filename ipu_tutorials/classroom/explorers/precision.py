"""The precision explorer: loss scale and dtype -> which gradients survive in low precision.

The gradients are real: the tutorial CNN after it has nearly fitted a batch of digits, when the
loss, and so every gradient, is tiny. The backward pass really runs in the chosen dtype. Every
figure a lesson prints from here is the same on every CPU and thread count: the network is
trained in float64, the reference gradients are float64, and float16 sums are made in float64
before each rounding, so no count depends on the order a CPU kernel adds in.
"""
from __future__ import annotations

import copy
import functools
import math

import torch

from ...profiling import style
from ...simulator.half import emulation
from ...support.threads import one_thread
from ...tutorial.datasets import embedded_digits
from ...tutorial.models import Network, TrainingModelWithLoss
from .widgets import FIGURE_INCHES, Explorer, choice, slider

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}


def representable(dtype: torch.dtype) -> tuple[float, float, float]:
    """(smallest subnormal, smallest normal, largest finite) magnitudes of a float type."""
    info = torch.finfo(dtype)
    return info.smallest_normal * info.eps, info.smallest_normal, info.max


@functools.lru_cache(maxsize=1)
def small_loss_network(steps: int = 10, seed: int = 0) -> tuple[torch.nn.Module, torch.Tensor, torch.Tensor]:
    """The CNN (float32) after `steps` AdamW steps on one batch of 40 digits: its loss is ~1e-5.

    Trained in float64 and then rounded to float32, so its weights are the same bits whatever
    the CPU's kernels (float32 training drifts by ~1e-6 between kernel sets).
    """
    generator_state = torch.get_rng_state()
    torch.manual_seed(seed)
    digits = embedded_digits(True)
    images, labels = digits.images[:40], digits.labels[:40]
    model = TrainingModelWithLoss(Network()).double()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    with one_thread():
        for _ in range(steps):
            optimizer.zero_grad()
            model(images.double(), labels)[1].backward()
            optimizer.step()
    torch.set_rng_state(generator_state)
    return model.float(), images, labels


def exact_backward(model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor) -> None:
    """Give each float32 weight of `model` its gradient from a float64 backward pass, rounded
    to float32: the gradients a lesson counts, the same on every CPU and thread count."""
    exact = copy.deepcopy(model).double()
    exact(images.double(), labels)[1].backward()
    for weight, reference in zip(model.parameters(), exact.parameters()):
        weight.grad = reference.grad.to(weight.dtype)


def small_loss(dtype: torch.dtype = torch.float64) -> float:
    """The loss of `small_loss_network` on its batch, computed in `dtype` (float64: exact)."""
    model, images, labels = small_loss_network()
    with torch.no_grad():
        return copy.deepcopy(model).to(dtype)(images.to(dtype), labels)[1].item()


def backward_in(dtype: torch.dtype = torch.float64, loss_scale: float = 1.0) -> torch.nn.Module:
    """A `dtype` copy of `small_loss_network` after one backward pass of its loss times
    `loss_scale`: its weights hold the loss-scaled gradients, as an IPU's accumulators do.

    Float16 runs as the simulator runs it (simulator/half.py), every op's result rounded to
    float16, with the arithmetic before each rounding in float64: sums of float16 products are
    then exact or nearly, so the counts do not depend on the CPU's kernels or threads.
    """
    model, images, labels = small_loss_network()
    model = copy.deepcopy(model).to(dtype)
    with emulation(dtype == torch.float16, compute=torch.float64), one_thread():
        _, loss = model(images.to(dtype), labels)
        (loss * loss_scale).backward()
    return model


def gradients(dtype: torch.dtype = torch.float64, loss_scale: float = 1.0) -> torch.Tensor:
    """Every weight gradient of one backward pass run in `dtype`, unscaled, as float64."""
    model = backward_in(dtype, loss_scale)
    return torch.cat([p.grad.flatten().double() for p in model.parameters()]) / loss_scale


def scale_overflows(loss_scale: float, dtype: torch.dtype) -> bool:
    """Whether the loss scale itself is past the type's largest number. The scale is the first
    gradient of the backward pass (d(scale x loss)/d loss), so every gradient is then inf/nan."""
    return bool(torch.tensor(loss_scale, dtype=torch.float64).to(dtype).isinf())


def survival(loss_scale: float, dtype: torch.dtype) -> dict:
    """How many of the gradients that are not zero (in float64) come through a `dtype` backward
    pass, and how the others were lost.

    A lost gradient "underflowed" when its exact scaled value is below the type's smallest
    normal number, where the type runs out of range (subnormals keep fewer bits, smaller values
    round to zero); it was "rounded" away when the type could hold it, but rounding earlier in
    the backward pass made it exactly zero (bfloat16's 8 significant bits round the correct
    class's probability, 1 - 3e-5, to exactly 1, so its gradient is 0 at every loss scale).
    """
    reference = gradients(torch.float64)
    low = gradients(dtype, loss_scale)
    alive, finite = reference != 0, torch.isfinite(low)
    lost = alive & (low == 0)
    in_range = reference.abs() * loss_scale >= torch.finfo(dtype).smallest_normal
    return {"reference": reference[alive], "total": int(alive.sum()), "lost": int(lost.sum()),
            "underflowed": int((lost & ~in_range).sum()), "rounded": int((lost & in_range).sum()),
            "overflowed": int((alive & ~finite).sum()),
            "survived": int((alive & finite & (low != 0)).sum()),
            "scale_overflows": scale_overflows(loss_scale, dtype)}


def describe(result: dict, dtype_name: str, loss_scale: float) -> str:
    total = result["total"]
    head = f"{dtype_name}, loss scale {loss_scale:,.0f}: "
    if result["scale_overflows"]:
        largest = torch.finfo(DTYPES[dtype_name]).max
        return (f"{head}<b>the loss scale itself is past {dtype_name}'s largest number "
                f"({largest:,.0f})</b>, so the backward pass starts from inf: "
                f"{result['overflowed']:,} of {total:,} gradients are inf or nan, none survive")
    rounded = (f", {result['rounded']:,} rounded to zero although {dtype_name} could hold them"
               if result["rounded"] else "")
    return (f"{head}<b>{result['survived'] / total:.1%} of {total:,} gradients survive</b>; "
            f"{result['underflowed']:,} underflow to zero{rounded}, "
            f"{result['overflowed']:,} overflow to inf/nan")


def draw_histogram(result: dict, dtype: torch.dtype, loss_scale: float, ax) -> None:
    """The exact gradients times the loss scale (log2), against the type's regions, with the
    loss scale itself marked: it is the backward pass's first gradient, so it must fit too."""
    scaled = (result["reference"].abs() * loss_scale).log2()
    scale = math.log2(loss_scale)
    tiny, normal, largest = (math.log2(v) for v in representable(dtype))
    # float16's top (2^16) stays on the axis for every type, so the types compare at a glance
    low, high = min(scaled.min().item(), tiny) - 2, max(scaled.max().item(), scale, 16) + 2
    color = "#9e9e9e" if result["scale_overflows"] else "#1e88e5"
    ax.hist(scaled.numpy(), bins=80, color=color, label="exact gradient x loss scale")
    if tiny > low:
        ax.axvspan(low, tiny, color="#e53935", alpha=0.2, label="underflows to 0")
        ax.axvspan(tiny, normal, color="#fb8c00", alpha=0.2, label="subnormal (fewer bits)")
    if largest < high:
        ax.axvspan(largest, high, color="#8e24aa", alpha=0.2, label="overflows to inf")
    ax.axvline(scale, color="#212121", linestyle="--", linewidth=1.2,
               label=f"the loss scale, 2^{scale:.0f} (backward's first gradient)")
    if result["scale_overflows"]:
        ax.set_title(f"the loss scale 2^{scale:.0f} is past the largest {str(dtype)[6:]}: "
                     f"every gradient is inf or nan", color="#6a1b9a")
    elif result["rounded"]:
        ax.set_title(f"{result['rounded']:,} gradients in range are rounded to zero on the way:\n"
                     f"{str(dtype)[6:]} has the range, not the significant bits")
    ax.set_xlim(low, high)
    ax.set_xlabel("log2 |gradient x loss scale|")
    ax.set_ylabel("gradients")
    style.readable(ax)
    style.legend_below(ax)


def precision_explorer(loss_scale_log2: int = 0, dtype: str = "float16") -> Explorer:
    """Slide the loss scale (a power of two) and watch gradients leave the underflow region."""
    controls = {"loss_scale_log2": slider("log2(loss scale)", loss_scale_log2, 0, 24),
                "dtype": choice("dtype", list(DTYPES), dtype)}

    def compute(loss_scale_log2, dtype):
        scale = float(2**loss_scale_log2)
        result = survival(scale, DTYPES[dtype])
        return {**result, "scale": scale, "dtype": DTYPES[dtype],
                "text": describe(result, dtype, scale)}

    def draw(result, figure):
        draw_histogram(result, result["dtype"], result["scale"], figure.subplots())
        figure.tight_layout()

    return Explorer("Precision explorer", controls, compute, draw, figsize=(FIGURE_INCHES, 3.4))


def stochastic_round(x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Round float32 values to float16 up or down at random, in proportion to their distance.

    Round-to-nearest always drops an addend smaller than half a float16 step; stochastic
    rounding keeps it on average, which is what the IPU's hardware rounding offers.
    """
    nearest = x.half()
    towards = torch.where(x > nearest.float(), torch.inf, -torch.inf).half()
    other = torch.nextafter(nearest, towards)
    gap = (other.float() - nearest.float()).abs()
    chance = torch.where(gap > 0, (x - nearest.float()).abs() / gap, torch.zeros_like(x))
    pick = torch.rand(x.shape, generator=generator) < chance
    return torch.where(pick, other, nearest)


def accumulate_in_half(increment: float, count: int, stochastic: bool, seed: int = 0) -> float:
    """Add `increment` to 1.0 `count` times, keeping the running sum in float16."""
    generator = torch.Generator().manual_seed(seed)
    total = torch.ones(1, dtype=torch.float16)
    for _ in range(count):
        exact = total.float() + increment
        total = stochastic_round(exact, generator) if stochastic else exact.half()
    return total.item()
