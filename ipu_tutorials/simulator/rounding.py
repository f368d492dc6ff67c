"""Rounding float32 results to float16 as IPU storage does: to nearest even, or stochastically.

Also the approximation of half partials: matmul and convolution sums accumulated in float16.
"""
from __future__ import annotations

import torch

# The IPU's accumulating matrix product (AMP) units add a short run of products at full precision
# before writing a partial sum in the partials type. We model that run as 16 products; 16 is our
# modelling choice (the run length is not published), not a documented hardware constant.
PARTIALS_BLOCK = 16


def to_half(x: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """Float16 storage of float32 values: round to nearest even, or stochastically.

    Round to nearest even is PyTorch's (and IEEE's) float32 -> float16 conversion: values past
    65504 (by at least half a step) become inf, values below half the smallest subnormal become
    zero. Stochastic rounding (given a generator) picks the float16 neighbour above or below with
    chances proportional to the distance, so the rounding is right on average.
    """
    nearest = x.to(torch.float16)
    if generator is None:
        return nearest
    towards = torch.where(x > nearest.float(), torch.inf, -torch.inf).to(torch.float16)
    other = torch.nextafter(nearest, towards)
    gap = (other.float() - nearest.float()).abs()
    distance = (x.float() - nearest.float()).abs()
    chance = torch.where(gap > 0, distance / gap, torch.zeros_like(distance))
    chance = torch.nan_to_num(chance, nan=0.0)  # inf or nan inputs keep their nearest value
    pick = torch.rand(x.shape, generator=generator) < chance
    return torch.where(pick, other, nearest)


def _sum_in_half(partials: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """Add float16 partial sums (along dim 0) pairwise, rounding every addition to float16."""
    while partials.shape[0] > 1:
        if partials.shape[0] % 2:
            partials = torch.cat([partials, torch.zeros_like(partials[:1])])
        pairs = partials.view(2, partials.shape[0] // 2, *partials.shape[1:])
        partials = to_half(pairs[0].float() + pairs[1].float(), generator)
    return partials[0]


def matmul_half_partials(a: torch.Tensor, b: torch.Tensor,
                         generator: torch.Generator | None = None) -> torch.Tensor:
    """a @ b (float32, shapes (..., M, K) and (..., K, N)) with float16 partial sums.

    The K products of each output are summed in blocks of PARTIALS_BLOCK at float32 precision;
    each block's sum is rounded to float16 and the block sums are added pairwise in float16.
    Returns float16 (..., M, N).
    """
    k = a.shape[-1]
    blocks = -(-k // PARTIALS_BLOCK)
    pad = blocks * PARTIALS_BLOCK - k
    if pad:
        a = torch.nn.functional.pad(a, (0, pad))
        b = torch.nn.functional.pad(b, (0, 0, 0, pad))
    a = a.unflatten(-1, (blocks, PARTIALS_BLOCK)).movedim(-2, 0)  # (blocks, ..., M, block)
    b = b.unflatten(-2, (blocks, PARTIALS_BLOCK)).movedim(-3, 0)  # (blocks, ..., block, N)
    return _sum_in_half(to_half(a @ b, generator), generator)
