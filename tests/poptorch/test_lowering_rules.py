"""Calls PopTorch cannot lower are refused when the model compiles, with PopTorch's messages;
the forms it can lower still compute as PyTorch does."""
import pytest
import torch
import torch.nn.functional as F

from ipu_tutorials import poptorch


def compiled(forward, x):
    class Model(torch.nn.Module):
        def forward(self, x):
            return forward(x)
    return poptorch.inferenceModel(Model())(x)


def test_one_hot_needs_a_constant_class_count():
    x = torch.tensor([0, 3, 1])
    with pytest.raises(poptorch.Error, match=r"^OneHot num classes must be specified and must be "
                       r"constant\.$"):
        compiled(lambda x: F.one_hot(x, num_classes=-1), x)
    assert torch.equal(compiled(lambda x: F.one_hot(x, 5), x), F.one_hot(x, 5))


@pytest.mark.parametrize("mode, shape, op", [("linear", (1, 2, 3), "upsample_linear1d"),
                                             ("trilinear", (1, 1, 2, 2, 2), "upsample_trilinear3d")])
def test_linear_and_trilinear_upsampling_are_refused(mode, shape, op):
    with pytest.raises(poptorch.Error, match=rf"^Unsupported upsample mode aten::{op}: currently "
                       rf"only 'nearest' is supported$"):
        compiled(torch.nn.Upsample(scale_factor=2, mode=mode), torch.randn(shape))


def test_nearest_and_bilinear_upsampling_compute_as_pytorch():
    x = torch.randn(1, 2, 3, 3)
    for mode in ("nearest", "bilinear"):
        up = torch.nn.Upsample(scale_factor=2, mode=mode)
        torch.testing.assert_close(compiled(up, x), up(x), rtol=1e-5, atol=1e-5)


def test_the_rules_hold_only_while_compiling():
    model = poptorch.inferenceModel(torch.nn.Identity())
    model(torch.ones(1))
    assert torch.equal(F.one_hot(torch.tensor([2])), torch.tensor([[0, 0, 1]]))


def test_bincount_needs_a_minimum_length():
    x = torch.tensor([0, 2, 2, 5])
    message = (r"^Bincount `minlength` must be specified and must be a constant\. On the IPU MK2 "
               r"platform the minimum length is also the maximum length$")
    with pytest.raises(poptorch.Error, match=message):
        compiled(torch.bincount, x)
    with pytest.raises(poptorch.Error, match=message):
        compiled(lambda x: x.bincount(), x)
    assert torch.equal(compiled(lambda x: x.bincount(minlength=8), x),
                       x.bincount(minlength=8).int())


def test_a_boolean_mask_index_is_refused_as_a_dynamic_shape():
    from torch._subclasses.fake_tensor import DynamicOutputShapeException

    x = torch.tensor([1.0, -2.0, 3.0])
    with pytest.raises(DynamicOutputShapeException, match=r"^indexing with a boolean mask gives an "
                       r"output whose shape depends on the mask's values"):
        compiled(lambda x: x[x > 0], x)
    with pytest.raises(poptorch.Error, match="torch.where"):
        compiled(lambda x: x[:, torch.tensor([True, False, True])], x.reshape(1, 3))
    assert torch.equal(compiled(lambda x: x[torch.tensor([0, 2])], x), x[[0, 2]])
    assert torch.equal(compiled(lambda x: torch.where(x > 0, x, 0), x), torch.tensor([1.0, 0, 3]))


def test_a_legacy_constructor_in_forward_makes_a_cpu_tensor_poptorch_refuses():
    x = torch.arange(4.0)
    with pytest.raises(poptorch.Error, match=r"^Expected an IPU tensor but got tensor\(device=cpu, "
                       r"shape=\[2\], dtype=Long\)\. A legacy constructor such as "
                       r"torch\.LongTensor\(\.\.\.\)"):
        compiled(lambda x: torch.index_select(x, 0, torch.LongTensor([1, 0])), x)
    with pytest.raises(poptorch.Error, match=r"shape=\[1\], dtype=Float\)"):
        compiled(lambda x: x * torch.Tensor([2.0]), x)
    # a factory (torch.tensor, torch.ones) traces onto the IPU, and inputs made before are fine
    assert compiled(lambda x: torch.index_select(x, 0, torch.tensor([1, 0])) + torch.ones(2),
                    x).tolist() == [2.0, 1.0]
    assert compiled(lambda x: x * 2, torch.FloatTensor([1.0, 2.0])).tolist() == [2.0, 4.0]
