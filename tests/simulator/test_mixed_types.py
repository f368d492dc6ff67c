"""float16 meeting float32: typed and cast as PopTorch 3.x's dispatcher types and casts."""
import pytest
import torch
import torch.nn as nn

from ipu_tutorials.simulator.mixed_types import MixedTypes


@pytest.mark.parametrize("shape, bias, transposed, dtype", [
    ((10,), True, False, torch.float16),  # matmul, in-place bias add (half_float_test's case)
    ((2, 3, 10), True, True, torch.float16),  # not contiguous: matmul, in-place bias add
    ((2, 2, 3, 10), True, False, torch.float16),  # 4-D: matmul, in-place bias add
    ((3, 10), False, False, torch.float16),  # mm
    ((3, 10), True, False, torch.float32),  # addmm: the float32 bias promotes
    ((2, 3, 10), True, False, torch.float32)])  # contiguous 3-D: flattened to addmm
def test_a_linear_layer_takes_the_type_torch_2_0_1_decomposes_it_to(shape, bias, transposed,
                                                                     dtype):
    torch.manual_seed(0)
    layer = nn.Linear(10, 4, bias=bias)
    x = torch.randn(shape).half()
    if transposed:  # the same shape, not contiguous
        x = torch.randn(shape[1], shape[0], shape[2]).half().transpose(0, 1)
        assert x.shape == shape and not x.is_contiguous()
    with MixedTypes() as mode:
        out = layer(x)
    assert mode.used and out.dtype == dtype
    expected = nn.functional.linear(x.float(), layer.weight, layer.bias)  # computed in float32
    assert torch.equal(out, expected.to(dtype))


def test_a_products_float32_weight_gets_a_float32_gradient_of_the_float32_product():
    torch.manual_seed(0)
    x = torch.randn(3, 5).half().requires_grad_()
    w = torch.randn(5, 2, requires_grad=True)
    with MixedTypes():
        y = x @ w
    assert y.dtype == torch.float16
    y.float().sum().backward()
    assert w.grad.dtype == torch.float32 and x.grad.dtype == torch.float16
    torch.testing.assert_close(w.grad, x.float().t() @ torch.ones(3, 2), rtol=0, atol=0)


@pytest.mark.parametrize("layer, shape", [
    (nn.Conv1d(4, 5, 2), (1, 4, 4)), (nn.LayerNorm(6), (2, 6)), (nn.GroupNorm(2, 4), (2, 4, 3))])
def test_convolutions_and_norms_cast_their_weights_to_the_inputs_type(layer, shape):
    torch.manual_seed(0)
    x = torch.randn(shape).half()
    with MixedTypes() as mode:
        out = layer(x)
    assert mode.used and out.dtype == torch.float16
    half_weights = {k: v.half().float() for k, v in layer.state_dict().items()}
    reference = torch.func.functional_call(layer, half_weights, (x.float(),))
    torch.testing.assert_close(out, reference.half(), rtol=1e-3, atol=1e-3)


def test_nothing_mixed_is_left_alone():
    layer = nn.Linear(3, 2)
    x = torch.randn(4, 3)
    with MixedTypes() as mode:
        out = layer(x)
    assert not mode.used and torch.equal(out, layer(x))
    assert not mode.used and (torch.ones(2).half() + torch.ones(2)).dtype == torch.float32
