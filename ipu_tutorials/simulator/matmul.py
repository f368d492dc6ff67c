"""Matmul and convolution shapes, and the fraction of the AMP's peak a shape reaches.

A tile's Accumulating Matrix Product (AMP) unit does 64 fp16 multiply-accumulates a cycle
(Mk2: 250 TFLOP/s / (1,472 tiles x 1.33 GHz) = 128 FLOP, [GC200] in hardware.py): a 16-wide
accumulation over the contraction dimension K for 4 outputs at once; fp32 runs at a quarter
of that (8-wide, 2 outputs). PopLibs pads K and N up to those units, spreads the work over the
chip's tiles, and every tile pays a fixed start-up (vertex launch, partials reduction) per op.
"""
from __future__ import annotations

import math

# (count, M, K, N): `count` independent products of (M x K) by (K x N): the batch of a bmm, the
# groups of a grouped or depthwise convolution (each group is its own small product).
Shape = tuple[int, int, int, int]

AMP_UNITS = {2: (16, 4, 64), 4: (8, 2, 16)}  # dtype bytes -> (K unit, N unit, MACs per cycle)
# The fraction of the padded AMP rate large matmuls reach: fitted with TILE_OVERHEAD_CYCLES and
# costs.ELEMENTWISE_OVERHEAD_CYCLES on the calibration runs (docs/cost-model.md): BERT-Large
# phase 1 on a Bow Pod16 (5,600 sequences/s, matmul-bound) and ResNet-50 on a Bow Pod16
# (42,029 images/s, many small steps), keeping the pipelining tutorial's PopVision trace
# (~1.35 M cycles per iteration) within its 1.5x bound.
AMP_FRACTION = 0.45
# cycles each tile spends per matmul besides its multiply-accumulates (vertex start-up, the
# reduction of partials across tiles): what makes small and thin matmuls slow. Calibrated with
# AMP_FRACTION (no published per-op cycle counts were found to fit it on directly).
TILE_OVERHEAD_CYCLES = 3_500


def _dims(t) -> list[int]:
    return list(t.shape)


def matmul_shape(name: str, args: tuple, out) -> Shape | None:
    """The (count, M, K, N) of one aten matmul or convolution call, None for anything else."""
    if name in ("aten.mm", "aten.addmm"):
        a, b = args[-2:]
        return 1, _dims(a)[0], _dims(a)[1], _dims(b)[1]
    if name in ("aten.bmm", "aten.baddbmm"):
        a, b = args[-2:]
        return _dims(a)[0], _dims(a)[1], _dims(a)[2], _dims(b)[2]
    if name in ("aten.convolution", "aten._convolution"):
        weight, groups = _dims(args[1]), int(args[8])
        positions = _dims(out)[0] * math.prod(_dims(out)[2:])  # output pixels: each group's M
        if args[6]:  # transposed: the weight is (in, out / groups, ...)
            return groups, positions, weight[0] // groups * math.prod(weight[2:]), weight[1]
        return groups, positions, weight[1] * math.prod(weight[2:]), weight[0] // groups
    return None


def matmul_efficiency(shape: Shape | None, dtype_bytes: int, tiles: int) -> float:
    """Fraction of the chip's peak FLOP/s one matmul or convolution of this shape reaches.

    The product is padded to the AMP's units (K to 16, N to 4 in fp16; 8 and 2 in fp32), its
    padded MACs are spread evenly over `tiles`, and each tile adds TILE_OVERHEAD_CYCLES.
    Approximate where PopLibs is cleverer or worse: it reorders and splits dimensions to pad
    less, serialises to fit memory (costed apart, in costs.op_seconds), runs depthwise and
    tiny-K convolutions on vector vertices rather than the AMP, and its per-tile overhead
    depends on the plan. A shape the capture did not record gets the large-matmul fraction.
    """
    if shape is None:
        return AMP_FRACTION
    count, m, k, n = shape
    k_unit, n_unit, macs_per_cycle = AMP_UNITS[2 if dtype_bytes <= 2 else 4]
    padded = count * m * math.ceil(k / k_unit) * k_unit * math.ceil(n / n_unit) * n_unit
    if not padded:
        return AMP_FRACTION
    useful = count * m * k * n / padded
    cycles = padded / (tiles * macs_per_cycle * AMP_FRACTION)
    return AMP_FRACTION * useful * cycles / (cycles + TILE_OVERHEAD_CYCLES)
