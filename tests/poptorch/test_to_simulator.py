"""The door to the simulator: Options become one RunSpec, with the user's names for the counts."""
import pytest
import torch
import torch.nn as nn

from ipu_tutorials import poptorch
from ipu_tutorials.support import environment
from ipu_tutorials.poptorch import _to_simulator
from ipu_tutorials.simulator.optimizer import DeviceOptimizer
from ipu_tutorials.simulator.spec import (MIXED_DISPATCHER, MIXED_DOWNCAST, OUTPUT_ALL, AutoRule,
                                         StrategyKind)
from ipu_tutorials.tutorial.models import WithMSELoss


def spec_of(opts, training=True, optimizer=None, batch=24, dtype=torch.float32):
    x = torch.zeros(batch, 3, dtype=dtype)
    return _to_simulator.run_spec(opts, training, optimizer, nn.Linear(3, 3), (x,), {},
                                  environment.read())


def test_counts_keep_the_users_names_and_the_inputs_fix_the_micro_batch(options):
    spec = spec_of(options(d=2, a=3, r=2), batch=2 * 3 * 2 * 5)
    assert (spec.device_iterations, spec.gradient_accumulation, spec.replication_factor,
            spec.micro_batch) == (2, 3, 2, 5)
    assert spec.samples_per_call == 60


def test_a_batch_that_does_not_divide_names_the_factor(options):
    with pytest.raises(poptorch.Error, match=r"multiple of deviceIterations \(2\) x "
                                             r"gradientAccumulation \(3\) x replicationFactor"):
        spec_of(options(d=2, a=3), batch=7)


def test_strategies_become_kinds_and_rules(options):
    opts = options().setExecutionStrategy(poptorch.ShardedExecution(poptorch.AutoStage.AutoIncrement))
    assert spec_of(opts).strategy.kind == StrategyKind.SHARDED
    assert spec_of(opts).strategy.auto == AutoRule.AUTO_INCREMENT
    phased = poptorch.SerialPhasedExecution(poptorch.Phase(poptorch.Stage("A")))
    spec = spec_of(options().setExecutionStrategy(phased))
    assert spec.strategy.kind.phased and spec.strategy.phases[0][0].blocks == ("A",)
    assert not spec.location("weight").on_chip  # phased execution streams unset weights


def test_inference_defaults_to_all_outputs_and_half_inputs_typed_as_in_poptorch_3(options):
    spec = spec_of(options(), training=False, dtype=torch.float16)
    assert spec.output_mode == OUTPUT_ALL and spec.mixed_precision == MIXED_DISPATCHER


def test_only_the_deprecated_downcast_option_runs_mixed_ops_in_float16(options, caplog):
    opts = options()
    with caplog.at_level("WARNING", logger="poptorch"):
        opts.Precision.halfFloatCasting(poptorch.HalfFloatCastingBehavior.FloatDowncastToHalf)
    assert "[Deprecated] options.Precision.halfFloatCasting()" in caplog.text
    assert spec_of(opts, training=False, dtype=torch.float16).mixed_precision == MIXED_DOWNCAST


def test_poptorch_optimizers_are_device_optimizers_and_torch_ones_are_sized_like_them():
    net = nn.Linear(4, 4)
    assert isinstance(poptorch.optim.AdamW(net.parameters()), DeviceOptimizer)
    assert not isinstance(torch.optim.AdamW(net.parameters()), DeviceOptimizer)
    ours = _to_simulator.optimizer_spec(poptorch.optim.AdamW(net.parameters()))
    theirs = _to_simulator.optimizer_spec(torch.optim.AdamW(net.parameters()))
    assert ours.state_per_param == theirs.state_per_param == 2


def test_the_spec_is_built_once_per_compile_and_replanned_for_a_new_optimizer(options):
    wrapped = WithMSELoss(nn.Linear(3, 2))
    net = wrapped.net
    model = poptorch.trainingModel(wrapped, options(), poptorch.optim.SGD(net.parameters(), lr=0.1))
    model(torch.randn(2, 3), torch.randn(2, 2))
    spec = model.plan.spec
    model(torch.randn(2, 3), torch.randn(2, 2))
    assert model.plan.spec is spec  # calls read the compile's spec
    model.setOptimizer(poptorch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9))
    assert model.plan.spec.optimizer.state_per_param == 1 and spec.optimizer.state_per_param == 0


def test_half_inputs_to_a_float_model_give_pytorchs_promoted_float32_result():
    """PopTorch 3.0+: a float16 input meeting float32 weights computes in float32."""
    torch.manual_seed(0)
    layer = nn.Linear(8, 4)
    x = torch.randn(6, 8).half()
    opts = poptorch.Options().showCompilationProgressBar(False)
    out = poptorch.inferenceModel(layer, opts)(x)
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, layer(x.float()), rtol=1e-5, atol=1e-5)
