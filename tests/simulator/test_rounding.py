"""Float16 rounding: nearest even like PyTorch, stochastic rounding right on average, and
matmuls with float16 partial sums."""
import torch

from ipu_tutorials.simulator.rounding import PARTIALS_BLOCK, matmul_half_partials, to_half


def test_nearest_rounding_is_pytorchs_conversion():
    x = torch.tensor([1.0 + 2 ** -11, 70000.0, 1e-9, -3.3])  # a tie, overflow, underflow
    assert torch.equal(to_half(x), x.to(torch.float16))


def test_stochastic_rounding_is_right_on_average_and_stays_on_neighbours():
    x = torch.full((20000,), 1.0 + 2 ** -12)  # a quarter of the way from 1 to the next half
    rounded = to_half(x, torch.Generator().manual_seed(0)).float()
    assert set(rounded.unique().tolist()) == {1.0, 1.0 + 2 ** -10}
    assert abs(rounded.mean().item() - x[0].item()) < 2e-5
    special = torch.tensor([float("inf"), float("nan"), 2.0])
    assert (to_half(special, torch.Generator().manual_seed(0)).float()[[0, 2]].tolist() ==
            [float("inf"), 2.0])


def test_half_partials_match_float32_on_exact_sums_and_round_large_ones():
    a, b = torch.ones(2, 3 * PARTIALS_BLOCK + 5), torch.ones(3 * PARTIALS_BLOCK + 5, 4)
    result = matmul_half_partials(a, b)
    assert result.dtype == torch.float16 and result.shape == (2, 4)
    assert torch.equal(result.float(), a @ b)
    # two blocks: 16 x 128 = 2048 and 16 x 1/16 = 1; 2049 lies between float16's 2048 and 2050
    a = torch.cat([torch.full((1, PARTIALS_BLOCK), 128.0), torch.full((1, PARTIALS_BLOCK), 1 / 16)], 1)
    b = torch.ones(2 * PARTIALS_BLOCK, 1)
    assert (a @ b).item() == 2049.0
    assert matmul_half_partials(a, b).item() == 2048.0  # the tie rounds to even
