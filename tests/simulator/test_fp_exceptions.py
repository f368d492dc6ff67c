"""Floating-point exceptions: PopTorch's exception_test cases, plus where the error points."""
import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.simulator.fp_exceptions import FloatingPointException


class Binary(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def run(fn, *inputs, enabled=True):
    opts = poptorch.Options().showCompilationProgressBar(False)
    opts.Precision.enableFloatingPointExceptions(enabled)
    return poptorch.inferenceModel(Binary(fn), opts)(*inputs)


ones, zeros = torch.ones(10, 10), torch.zeros(10, 10)
CASES = {  # PopTorch's tests/exception_test.py, each raising on the IPU when enabled
    "div0": (lambda x, y: x / y, (ones, zeros), "div", "division by zero"),
    "mul0inf": (lambda x, y: x * y, (zeros, ones / zeros), "mul", "invalid operation"),
    "nonreal": (torch.sqrt, (torch.tensor([-1.0, -2.0]),), "sqrt", "invalid operation"),
    "nan": (lambda x, y: x > y, (ones, zeros / zeros), "gt", "comparison with a NaN"),
    "ovf": (torch.exp, (torch.tensor([3800.0, 4203.0]),), "exp", "overflow"),
}


@pytest.mark.parametrize("case", CASES)
def test_enabled_raises_naming_the_op_and_the_kind(case):
    fn, inputs, op, kind = CASES[case]
    with pytest.raises(poptorch.Error, match=kind) as error:
        run(fn, *inputs)
    assert error.value.op == op
    assert "enableFloatingPointExceptions" in str(error.value)


@pytest.mark.parametrize("case", CASES)
def test_disabled_lets_infinities_and_nans_flow_as_pytorch_does(case):
    fn, inputs, _, _ = CASES[case]
    torch.testing.assert_close(run(fn, *inputs, enabled=False), fn(*inputs), equal_nan=True)


def test_finite_results_pass_and_equal_pytorch():
    x = torch.randn(10, 10)
    torch.testing.assert_close(run(torch.exp, x), torch.exp(x), atol=1e-5, rtol=1e-5)


class HandSoftmax(torch.nn.Module):
    def forward(self, x):
        e = torch.exp(x)
        return e / e.sum(-1, keepdim=True)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
        self.softmax = HandSoftmax()

    def forward(self, x):
        return self.softmax(self.fc(x))


def fixed_net() -> Net:
    net = Net()
    with torch.no_grad():
        net.fc.weight.fill_(0.5)
        net.fc.bias.zero_()
    return net


def test_a_float16_overflow_names_the_op_and_its_module():
    x = torch.full((2, 4), 6.0)  # fc gives 12; exp(12) > 65504, float16's largest value
    opts = poptorch.Options().showCompilationProgressBar(False)
    opts.Precision.enableFloatingPointExceptions(True)
    with pytest.raises(FloatingPointException, match="module 'softmax'") as error:
        poptorch.inferenceModel(fixed_net().half(), opts)(x.half())
    assert error.value.op == "exp"
    assert error.value.module == "softmax"
    float32 = poptorch.inferenceModel(fixed_net(), opts.clone())(x)
    torch.testing.assert_close(float32, torch.full((2, 3), 1 / 3))  # float32 holds exp(12)


def test_an_exception_in_the_backward_pass_says_so():
    class SqrtLoss(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(3))

        def forward(self, x):  # sqrt(0) is fine forwards; its gradient divides by zero
            return poptorch.identity_loss(torch.sqrt(self.w * x), reduction="sum")

    opts = poptorch.Options().showCompilationProgressBar(False)
    opts.Precision.enableFloatingPointExceptions(True)
    model = SqrtLoss()
    training = poptorch.trainingModel(model, opts, torch.optim.SGD(model.parameters(), lr=0.1))
    with pytest.raises(FloatingPointException, match="the backward pass"):
        training(torch.ones(1, 3))


def test_a_finite_training_run_is_unchanged_by_the_checks():
    def trained(enabled):
        torch.manual_seed(0)
        model = Net()
        opts = poptorch.Options().showCompilationProgressBar(False)
        opts.Precision.enableFloatingPointExceptions(enabled)

        class WithLoss(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.net = model

            def forward(self, x):  # backward allocates empty tensors: they must not trip it
                return poptorch.identity_loss(self.net(x).pow(2), reduction="mean")

        poptorch.trainingModel(WithLoss(), opts, torch.optim.SGD(model.parameters(), lr=0.1))(
            torch.randn(4, 4, generator=torch.Generator().manual_seed(1)))
        return model.fc.weight.detach().clone()

    torch.testing.assert_close(trained(True), trained(False), atol=1e-5, rtol=1e-5)
