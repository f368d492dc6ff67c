"""The shape-dependent matmul model: AMP padding, tiles per matmul, and shapes from capture."""
import pytest
import torch
import torch.nn as nn

from ipu_tutorials.simulator import capture
from ipu_tutorials.simulator.hardware import GC200
from ipu_tutorials.simulator.matmul import AMP_FRACTION, matmul_efficiency

TILES = GC200.tiles


def test_a_large_square_matmul_nears_the_amp_fraction():
    assert 0.9 * AMP_FRACTION < matmul_efficiency((1, 4096, 4096, 4096), 2, TILES) <= AMP_FRACTION


def test_a_small_matmul_runs_far_below_a_large_one():
    small = matmul_efficiency((1, 64, 64, 64), 2, TILES)
    assert small < matmul_efficiency((1, 4096, 4096, 4096), 2, TILES) / 10


def test_padding_to_the_amp_units_wastes_the_padded_part():
    # K = 17 pads to 32 in fp16: about half the AMP's work is padding
    big = (1, 1 << 22, 16, 1024)  # large enough that the per-tile overhead vanishes
    padded = (1, 1 << 22, 17, 1024)
    ratio = matmul_efficiency(padded, 2, TILES) / matmul_efficiency(big, 2, TILES)
    assert ratio == pytest.approx(17 / 32, rel=0.05)


def test_fp32_pads_to_smaller_units_than_fp16():
    shape = (1, 1 << 22, 8, 1024)  # K = 8 fills fp32's 8-wide unit, half of fp16's
    assert matmul_efficiency(shape, 4, TILES) > 1.8 * matmul_efficiency(shape, 2, TILES)


def test_a_depthwise_convolution_is_costed_by_its_groups():
    x = torch.zeros(8, 64, 56, 56)
    depthwise = capture(nn.Conv2d(64, 64, 3, padding=1, groups=64), (x,), {}).ops[0]
    grouped = capture(nn.Conv2d(64, 64, 3, padding=1, groups=4), (x,), {}).ops[0]
    dense = capture(nn.Conv2d(64, 64, 3, padding=1), (x,), {}).ops[0]
    assert depthwise.shape == (64, 8 * 56 * 56, 9, 1)
    assert grouped.shape == (4, 8 * 56 * 56, 16 * 9, 16)
    assert dense.shape == (1, 8 * 56 * 56, 64 * 9, 64)
    assert depthwise.flops == dense.flops / 64
    efficiencies = [matmul_efficiency(op.shape, 4, TILES) for op in (depthwise, grouped, dense)]
    assert efficiencies == sorted(efficiencies)


def test_capture_records_the_shapes_of_linear_and_batched_matmuls():
    ops = capture(nn.Linear(32, 48), (torch.zeros(10, 32),), {}).ops
    assert [op.shape for op in ops if op.kind == "matmul"] == [(1, 10, 32, 48)]
    a, b = torch.zeros(6, 5, 7), torch.zeros(6, 7, 9)
    bmm = capture(_Bmm(), (a, b), {}).ops
    assert [op.shape for op in bmm if op.kind == "matmul"] == [(6, 5, 7, 9)]


class _Bmm(nn.Module):
    def forward(self, a, b):
        return a @ b
