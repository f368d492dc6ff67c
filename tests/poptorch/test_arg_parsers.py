"""A custom argument parser lets a model take and return objects of the user's own type."""
import pytest
import torch

from ipu_tutorials import poptorch


class Pair:
    def __init__(self, first, second):
        self.first, self.second = first, second


class PairParser(poptorch.ICustomArgParser):
    def yieldTensors(self, struct):
        yield struct.first
        yield struct.second

    def reconstruct(self, original_structure, tensor_iterator):
        return Pair(next(tensor_iterator), next(tensor_iterator))


class SumAndKeep(torch.nn.Module):
    def forward(self, pair):
        return Pair(pair.first + pair.second, pair.first)


def test_objects_are_split_per_device_iteration_and_rebuilt(options):
    poptorch.registerCustomArgParser(Pair, PairParser())
    model = poptorch.inferenceModel(SumAndKeep(), options(d=2))
    for scale in (1.0, 2.0):  # a new object of the same type reuses the compiled model
        a, b = torch.randn(4, 3) * scale, torch.randn(4, 3)
        out = model(Pair(a, b))
        assert isinstance(out, Pair)
        torch.testing.assert_close(out.first, a + b)
        torch.testing.assert_close(out.second, a)


def test_registration_checks_its_arguments():
    with pytest.raises(TypeError, match="the class to parse"):
        poptorch.registerCustomArgParser(Pair(1, 2), PairParser())
    with pytest.raises(TypeError, match="ICustomArgParser instance, got str"):
        poptorch.registerCustomArgParser(Pair, "parser")
