"""poptorch.CPU: a host function inside a wrapped model gives the plain PyTorch results."""
import pytest
import torch

from ipu_tutorials import poptorch


class TwoHostCalls(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)
        self.on_host = poptorch.CPU(self.scale_and_shift, "ScaleShift")

    def scale_and_shift(self, x, y):
        return x * y, x + y

    def forward(self, x, y):
        product, total = self.on_host(self.linear(x), y)
        return self.on_host(product, total)[0]


def test_results_match_plain_pytorch_and_follow_new_inputs(options):
    model = TwoHostCalls()
    ipu = poptorch.inferenceModel(model, options())
    x = torch.randn(3, 4)
    for y in (torch.tensor([2.0]), torch.tensor([-1.5])):
        torch.testing.assert_close(ipu(x, y), model(x, y), atol=1e-5, rtol=1e-5)


def test_a_module_run_on_the_host_is_frozen():
    layer = torch.nn.Linear(2, 2)
    poptorch.CPU(layer, "OnHost")
    assert not any(p.requires_grad for p in layer.parameters())


@pytest.mark.parametrize("args, message", [((3, "Op"), "takes a function or a module, got int"),
                                           ((abs, 7), "op's name as a string, got int")])
def test_bad_arguments_are_refused(args, message):
    with pytest.raises(TypeError, match=message):
        poptorch.CPU(*args)


def test_the_host_function_always_receives_cpu_tensors(options):
    devices = []

    def double(x):
        devices.append(x.device.type)
        return x * 2.0

    class Chain(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.on_host = poptorch.CPU(double, "Double")

        def forward(self, x):
            return self.on_host(self.on_host(x))

    x = torch.randn(2, 3)
    torch.testing.assert_close(poptorch.inferenceModel(Chain(), options())(x), x * 4.0)
    assert devices and set(devices) == {"cpu"}  # also while compiling, which traces shapes
