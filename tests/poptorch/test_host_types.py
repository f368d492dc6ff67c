"""The host boundary: 64-bit outputs come back in the IPU's 32-bit types, other types as they
are; inputs lose requires_grad."""
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.poptorch._host_types import detach_inputs, ipu_output_types


def wrapped(forward):
    class Model(torch.nn.Module):
        def forward(self, *args):
            return forward(*args)
    return poptorch.inferenceModel(Model())


def test_int64_results_come_back_as_int32():  # bool_support_test: sum of a comparison
    x, y = torch.tensor([1, 2, 3]), torch.tensor([1, 0, 3])
    out = wrapped(lambda x, y: (torch.sum(x == y), torch.arange(4) + x.sum()))(x, y)
    assert out[0].dtype == torch.int32 and out[0].item() == 2
    assert out[1].dtype == torch.int32 and out[1].tolist() == [6, 7, 8, 9]


def test_float64_results_come_back_as_float32():
    x = torch.randn(5, dtype=torch.float64)
    out = wrapped(lambda x: x.exp())(x)
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, x.exp().float(), rtol=1e-5, atol=1e-5)


def test_other_types_and_structures_are_kept():
    tree = {"h": torch.ones(2, dtype=torch.half), "b": [torch.ones(1, dtype=torch.bool)],
            "i": (torch.ones(1, dtype=torch.int32), 7), "f": torch.ones(1)}
    out = ipu_output_types(tree)
    assert out["h"] is tree["h"] and out["b"][0] is tree["b"][0] and out["f"] is tree["f"]
    assert out["i"][0] is tree["i"][0] and out["i"][1] == 7


def test_inputs_lose_requires_grad_and_keep_their_values():
    x = torch.randn(3, requires_grad=True)
    (args, kwargs) = detach_inputs(((x, 2), {"y": x}), warn=False)
    assert not args[0].requires_grad and not kwargs["y"].requires_grad
    assert torch.equal(args[0], x) and args[1] == 2


def test_the_ipu_holds_64_bit_types_in_32_bits():
    from ipu_tutorials.poptorch._host_types import ipu_dtype

    assert [ipu_dtype(t) for t in (torch.int64, torch.float64, torch.half, torch.bool)] == [
        torch.int32, torch.float32, torch.half, torch.bool]
