"""poptorch ops and utilities on the CPU: values equal plain PyTorch, errors say what to fix."""
import logging

import pytest
import torch
import torch.nn as nn

from ipu_tutorials import poptorch
from ipu_tutorials.errors import Error
from ipu_tutorials.poptorch import ops as ops_module
from ipu_tutorials.simulator import tracing

Mode = poptorch.MatMulSerializationMode


@pytest.fixture
def registry(monkeypatch):
    """An empty custom-op registry for one test."""
    monkeypatch.setattr(ops_module, "_CUSTOM_OPS", {})
    return ops_module._CUSTOM_OPS


@pytest.fixture
def log_level():
    logger = logging.getLogger("poptorch")
    saved = logger.level
    yield logger
    logger.setLevel(saved)


# --- ipu_print_tensor -----------------------------------------------------------------------------
def test_print_tensor_prints_nothing_on_the_cpu_and_returns_an_equal_copy(capsys):
    x = torch.randn(3, 4, requires_grad=True)
    y = poptorch.ipu_print_tensor(x, "x")
    assert torch.equal(y, x) and y is not x
    y.sum().backward()
    assert torch.equal(x.grad, torch.ones(3, 4))  # gradient flows straight through
    assert capsys.readouterr() == ("", "")


def test_print_tensor_prints_value_and_gradient_when_running_on_the_ipu(capsys):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with tracing.running_on_ipu():
        y = poptorch.ipu_print_tensor(x, "x")
    (y * torch.tensor([3.0, 4.0])).sum().backward()
    assert capsys.readouterr().err == "x: (1, 2)\nx_gradient: (3, 4)\n"  # Poplar prints to stderr
    assert torch.equal(x.grad, torch.tensor([3.0, 4.0]))


def test_print_tensor_formatting_options(capsys):
    with tracing.running_on_ipu():
        poptorch.ipu_print_tensor(torch.tensor([0.5, 1.5]), separator="; ", open_bracket="<",
                                  close_bracket=">", print_gradient=False)
    assert capsys.readouterr().err == "<0.5; 1.5>\n"



def test_print_tensor_rejects_bad_arguments():
    with pytest.raises(TypeError, match=r"ipu_print_tensor expects a torch.Tensor, got list"):
        poptorch.ipu_print_tensor([1.0])
    with pytest.raises(ValueError, match=r"float_format must be 'auto', 'fixed', 'scientific' or "
                                         r"'none', got 'short'"):
        poptorch.ipu_print_tensor(torch.ones(1), float_format="short")


# --- identity_loss and nop ----------------------------------------------------------------------------
@pytest.mark.parametrize("reduction, expected", [
    ("sum", lambda x: x.sum()), ("mean", lambda x: x.mean()), ("none", lambda x: x)])
def test_identity_loss_reductions(reduction, expected):
    x = torch.randn(4, 3, requires_grad=True)
    loss = poptorch.identity_loss(x, reduction=reduction)
    reference = expected(x)
    assert loss.shape == reference.shape
    assert torch.allclose(loss, reference, atol=1e-6)
    loss.sum().backward()
    grad = x.grad.clone()
    x.grad = None
    reference.sum().backward()
    assert torch.allclose(grad, x.grad)
    if reduction == "none":
        assert loss is not x  # a copy, so the marker never aliases its input


def test_identity_loss_rejects_unknown_reductions_and_non_tensors():
    # PopTorch asserts (python/ops.py: identity_loss)
    with pytest.raises(AssertionError, match=r"Unsupported reduction type! identity_loss "
                                             r"reduction must be 'sum', 'mean' or 'none', "
                                             r"got 'max'"):
        poptorch.identity_loss(torch.ones(2), reduction="max")
    with pytest.raises(AssertionError, match=r"got 'Sum'"):
        poptorch.identity_loss(torch.ones(2), reduction="Sum")
    with pytest.raises(TypeError, match=r"identity_loss expects a torch.Tensor, got float"):
        poptorch.identity_loss(1.0, reduction="sum")


def test_nop_returns_an_equal_copy():
    x = torch.randn(5)
    y = poptorch.nop(x)
    assert torch.equal(x, y) and y.data_ptr() != x.data_ptr()


# --- serializedMatMul ------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", list(Mode))
@pytest.mark.parametrize("factor", [1, 2, 3, 4, 6, 7])
def test_serialized_matmul_equals_plain_matmul(mode, factor):
    lhs, rhs = torch.randn(2, 6, 6), torch.randn(6, 5)  # 6 and 5 rows/cols: some factors divide
    result = poptorch.serializedMatMul(lhs, rhs, mode, factor)
    assert result.shape == (2, 6, 5)
    assert torch.allclose(result, lhs @ rhs, atol=1e-5)


@pytest.mark.parametrize("mode", [Mode.InputChannels, Mode.ReducingDim, Mode.OutputChannels])
def test_serialized_matmul_gradients_equal_plain_matmul(mode):
    lhs = torch.randn(4, 6, requires_grad=True)
    rhs = torch.randn(6, 3, requires_grad=True)
    poptorch.serializedMatMul(lhs, rhs, mode, 4).pow(2).sum().backward()
    grads = lhs.grad.clone(), rhs.grad.clone()
    lhs.grad = rhs.grad = None
    (lhs @ rhs).pow(2).sum().backward()
    assert torch.allclose(grads[0], lhs.grad, atol=1e-5)
    assert torch.allclose(grads[1], rhs.grad, atol=1e-5)


def test_serialized_matmul_rejects_bad_mode_and_factor():
    lhs, rhs = torch.randn(2, 3), torch.randn(3, 2)
    with pytest.raises(TypeError, match=r"serializedMatMul mode must be a "
                                        r"poptorch.MatMulSerializationMode, got 'input_channels'"):
        poptorch.serializedMatMul(lhs, rhs, "input_channels", 2)
    with pytest.raises(ValueError, match=r"serializedMatMul\(factor\) must be a positive integer, "
                                         r"got 0"):
        poptorch.serializedMatMul(lhs, rhs, Mode.ReducingDim, 0)
    with pytest.raises(TypeError, match=r"serializedMatMul\(factor\) expects an integer, got "
                                        r"float 2.0"):
        poptorch.serializedMatMul(lhs, rhs, Mode.OutputChannels, 2.0)
    # Disabled ignores the factor, as in PopTorch (the default factor is 0)
    assert torch.allclose(poptorch.serializedMatMul(lhs, rhs, Mode.Disabled), lhs @ rhs)


# --- markers that return their inputs -------------------------------------------------------------------
def test_set_available_memory_returns_its_input_and_checks_the_proportion():
    x = torch.randn(3)
    assert poptorch.set_available_memory(x, 0.3) is x
    assert poptorch.set_available_memory(x, 1) is x
    with pytest.raises(ValueError, match=r"set_available_memory\(\) must be in \(0, 1\], got 0"):
        poptorch.set_available_memory(x, 0)
    with pytest.raises(ValueError, match=r"must be in \(0, 1\], got 1.2"):
        poptorch.set_available_memory(x, 1.2)
    with pytest.raises(TypeError, match=r"set_available_memory\(\) expects a number between 0 "
                                        r"and 1, got '0.5'"):
        poptorch.set_available_memory(x, "0.5")


def test_recomputation_checkpoint_returns_its_inputs():
    a, b = torch.randn(2), torch.randn(3)
    assert poptorch.recomputationCheckpoint(a) is a
    both = poptorch.recomputationCheckpoint(a, b)
    assert isinstance(both, tuple) and both[0] is a and both[1] is b
    with pytest.raises(ValueError, match=r"All inputs must be tensors: .* got a list"):
        poptorch.recomputationCheckpoint(a, [b])


@pytest.mark.parametrize("container", [list, tuple])
def test_recomputation_checkpoint_keeps_a_single_list_or_tuple(container):
    a, b = torch.randn(2), torch.randn(3)
    out = poptorch.recomputationCheckpoint(container([a, b]))
    assert type(out) is container and out[0] is a and out[1] is b


# --- custom ops -------------------------------------------------------------------------------------------
def test_custom_op_runs_the_registered_implementation(registry):
    poptorch.register_custom_op("LeakyRelu", "custom.ops", lambda x, alpha=0.01: [
        torch.where(x > 0, x, alpha * x)])
    x = torch.tensor([-2.0, 3.0])
    out = poptorch.custom_op([x], "LeakyRelu", "custom.ops", 1, example_outputs=[x],
                             attributes={"alpha": 0.5})
    assert isinstance(out, list) and len(out) == 1
    assert torch.equal(out[0], torch.tensor([-1.0, 3.0]))


def test_custom_op_gradient_flows_through(registry):
    poptorch.register_custom_op("Cube", "custom.ops", lambda x: x ** 3)  # a bare tensor is fine
    x = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)
    (y,) = poptorch.custom_op([x], "Cube", "custom.ops", 1, example_outputs=[x])
    y.sum().backward()
    assert torch.allclose(x.grad, 3 * x.detach() ** 2)


def test_custom_op_with_several_inputs_and_outputs(registry):
    poptorch.register_custom_op("AddMul", "ops", lambda a, b: (a + b, a * b))
    a, b = torch.randn(2, 3), torch.randn(2, 3)
    total, product = poptorch.custom_op([a, b], "AddMul", "ops", 1, example_outputs=[a, a])
    assert torch.equal(total, a + b) and torch.equal(product, a * b)


def test_unregistered_custom_op_explains_how_to_register_it(registry):
    poptorch.register_custom_op("Known", "ops", lambda x: x)
    with pytest.raises(Error, match=r"custom op 'Cube' in domain 'custom.ops' is not registered "
                                    r"\(registered: 'Known' \(ops\)\).*"
                                    r"poptorch.register_custom_op\('Cube', 'custom.ops', fn\)"):
        poptorch.custom_op([torch.ones(1)], "Cube", "custom.ops", 1, example_outputs=[torch.ones(1)])
    with pytest.raises(Error, match=r"'Known' in domain 'other' is not registered"):
        poptorch.custom_op([torch.ones(1)], "Known", "other", 1, example_outputs=[torch.ones(1)])


def test_custom_op_output_count_and_shape_must_match_the_examples(registry):
    poptorch.register_custom_op("Split", "ops", lambda x: [x[:1], x[1:]])
    x = torch.randn(3)
    with pytest.raises(Error, match=r"custom op 'Split' returned 2 output\(s\) but "
                                    r"example_outputs describes 1"):
        poptorch.custom_op([x], "Split", "ops", 1, example_outputs=[x])
    with pytest.raises(Error, match=r"custom op 'Split' output 1 is \(2,\) torch.float32, but "
                                    r"example_outputs\[1\] is \(3,\) torch.float32"):
        poptorch.custom_op([x], "Split", "ops", 1, example_outputs=[x[:1], x])
    with pytest.raises(Error, match=r"output 0 is \(1,\) torch.float32, but example_outputs\[0\] "
                                    r"is \(1,\) torch.float16"):
        poptorch.custom_op([x], "Split", "ops", 1, example_outputs=[x[:1].half(), x[1:]])


def test_register_custom_op_checks_its_arguments(registry):
    with pytest.raises(TypeError, match=r"register_custom_op needs a callable implementation"):
        poptorch.register_custom_op("A", "ops", "not callable")
    with pytest.raises(TypeError, match=r"register_custom_op\(name\) expects a string, got int 1"):
        poptorch.register_custom_op(1, "ops", abs)
    with pytest.raises(TypeError, match=r"register_custom_op\(domain\) expects a string"):
        poptorch.register_custom_op("A", None, abs)
    assert registry == {}


# --- MultiConv --------------------------------------------------------------------------------------------
def test_multiconv_records_settings_and_leaves_convolutions_unchanged():
    conv_a, conv_b = torch.nn.Conv2d(1, 2, 3), torch.nn.Conv2d(1, 2, 3)
    x = torch.randn(1, 1, 5, 5)
    multi = poptorch.MultiConv().availableMemoryProportions((0.3, 0.4)).planType(
        poptorch.MultiConvPlanType.Serial)
    assert multi._settings == {"availableMemoryProportions": (0.3, 0.4)}
    assert multi._plan_type == poptorch.MultiConvPlanType.Serial
    with multi:
        a, b = conv_a(x), conv_b(x)
    assert torch.equal(a, conv_a(x)) and torch.equal(b, conv_b(x))
    assert multi.planType(None)._plan_type == poptorch.MultiConvPlanType.Parallel  # the default


def test_multiconv_plan_type_given_as_a_string_is_refused_with_poptorchs_exception_type():
    with pytest.raises(AssertionError, match=r"Invalid plan type 'serial': MultiConv.planType "
                                             r"expects a poptorch.MultiConvPlanType"):
        poptorch.MultiConv().planType("serial")


# --- environment queries and logging -----------------------------------------------------------------------
def test_is_running_on_ipu_only_inside_a_wrapped_forward():
    assert poptorch.isRunningOnIpu() is False
    with tracing.running_on_ipu():
        assert poptorch.isRunningOnIpu() is True
    assert poptorch.isRunningOnIpu() is False


def test_no_ipu_hardware_is_available():
    assert poptorch.ipuHardwareIsAvailable() is False
    assert poptorch.ipuHardwareIsAvailable(4) is False
    assert poptorch.ipuHardwareVersion() == -1
    with pytest.raises(ValueError, match=r"ipuHardwareIsAvailable\(\) must be a positive integer, "
                                         r"got 0"):
        poptorch.ipuHardwareIsAvailable(0)


@pytest.mark.parametrize("name, level", [
    ("TRACE", logging.DEBUG - 5), ("DEBUG", logging.DEBUG), ("INFO", logging.INFO),
    ("WARN", logging.WARNING), ("ERR", logging.ERROR), ("OFF", logging.CRITICAL + 10),
    ("info", logging.INFO)])
def test_set_log_level_accepts_poptorch_names(log_level, name, level):
    assert poptorch.setLogLevel(name) is None
    assert log_level.level == level


@pytest.mark.parametrize("number, level", [(0, logging.DEBUG - 5), (1, logging.DEBUG),
                                           (2, logging.INFO), (3, logging.WARNING),
                                           (4, logging.ERROR), (6, logging.CRITICAL + 10)])
def test_set_log_level_accepts_poptorch_legacy_integers(log_level, number, level):
    poptorch.setLogLevel(number)
    assert log_level.level == level


def test_set_log_level_rejects_unknown_levels(log_level):
    log_level.setLevel(logging.INFO)
    with pytest.raises(ValueError, match=r"Unknown log level: wibble. Valid values are DEBUG, "
                                         r"ERR, INFO, OFF, TRACE and WARN"):
        poptorch.setLogLevel("wibble")
    for number in (5, -1, logging.WARNING):  # PopTorch's integers are not logging's
        with pytest.raises(ValueError, match=rf"Invalid log level integer {number}"):
            poptorch.setLogLevel(number)
    with pytest.raises(ValueError, match=r"Unknown log level: 1.5"):
        poptorch.setLogLevel(1.5)
    assert log_level.level == logging.INFO


def test_nop_and_set_available_memory_need_a_tensor():
    with pytest.raises(Error, match=r"nop must take a torch.tensor argument. <class 'int'> is "
                                    r"not supported"):
        poptorch.nop(3)
    with pytest.raises(Error, match=r"You may only set available memory for torch.tensor "
                                    r"values. <class 'list'> is not supported"):
        poptorch.set_available_memory([torch.ones(1)], 0.5)


# --- MultiConv rules -----------------------------------------------------------------------------
class _ConvIn(nn.Module):
    def __init__(self, body):
        super().__init__()
        self.conv, self.body = nn.Conv2d(1, 2, 3), body

    def forward(self, x):
        return self.body(self, x)


def _nested(model, x):
    with poptorch.MultiConv():
        with poptorch.MultiConv():
            return model.conv(x)


def _no_conv(model, x):
    with poptorch.MultiConv():
        return x * 2


@pytest.mark.parametrize("body, message", [(_nested, "Nested poptorch.MultiConv is not supported"),
                                           (_no_conv, "Unexpected end_multi_conv: .* no convolution")])
def test_multiconv_blocks_are_flat_and_hold_a_convolution(body, message):
    with pytest.raises(Error, match=message):
        poptorch.inferenceModel(_ConvIn(body))(torch.ones(1, 1, 5, 5))


def test_multiconv_partials_types_are_float_or_half():
    assert poptorch.MultiConv().partialsTypes([torch.half, torch.float])._settings
    with pytest.raises(ValueError, match="Invalid partials types 'half'"):
        poptorch.MultiConv().partialsTypes("half")
