"""Behaviours found by review: each was wrong once, and each test shows it right now."""
import gc

import pytest
import torch
import torch.nn as nn

from ipu_tutorials import poptorch, tutorial
from ipu_tutorials.simulator.capture import capture
from ipu_tutorials.simulator.schedule import StageTimes, StepCosts, call_timeline

def options(**counts):
    opts = poptorch.Options().showCompilationProgressBar(False)
    opts.deviceIterations(counts.get("d", 1)).replicationFactor(counts.get("r", 1))
    opts.Training.gradientAccumulation(counts.get("a", 1))
    return opts


class DictOutputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, x, y):
        out = self.fc(x)
        return {"step": 1, "out": out, "loss": nn.functional.mse_loss(out, y)}


def test_the_loss_is_found_among_outputs_that_are_not_all_tensors():
    torch.manual_seed(0)
    model, reference = DictOutputs(), DictOutputs()
    reference.load_state_dict(model.state_dict())
    x, y = torch.randn(8, 3), torch.randn(8, 2)
    result = poptorch.trainingModel(model, options(a=2), poptorch.optim.SGD(
        model.parameters(), lr=0.1))(x, y)
    assert result["step"] == 1 and result["loss"].shape == ()
    optimizer = torch.optim.SGD(reference.parameters(), lr=0.1)
    for xs, ys in ((x[:4], y[:4]), (x[4:], y[4:])):
        reference(xs, ys)["loss"].backward()
    for p in reference.parameters():
        p.grad /= 2
    optimizer.step()
    torch.testing.assert_close(model.fc.weight, reference.fc.weight)


def test_float16_accumulators_keep_a_running_mean_that_cannot_overflow():
    class Big(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.zeros(1))

        def forward(self, x):
            return poptorch.identity_loss(self.w * x, reduction="sum")

    model = Big()
    sgd = poptorch.optim.SGD(model.parameters(), lr=1e-6, accum_type=torch.float16)
    training = poptorch.trainingModel(model, options(a=4), sgd)
    assert training.options.Training.meanAccumulationAndReplicationReductionStrategy == \
        poptorch.MeanReductionStrategy.Running
    training(torch.full((4,), 30000.0))  # each gradient is 30,000; their sum overflows float16
    assert model.w.item() == pytest.approx(-1e-6 * 30000, rel=1e-3)


def test_begin_block_on_a_function_starts_a_block_that_lasts():
    class Functional(nn.Module):
        def forward(self, x):
            x = x + 1
            x = poptorch.BeginBlock(torch.relu, "second", ipu_id=1)(x)
            return x * 2  # still in "second"

    graph = capture(_FirstBlock(Functional()), (torch.randn(2, 3),), {})
    assert [op.block for op in graph.ops][-2:] == ["second", "second"]


class _FirstBlock(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        poptorch.Block.start("first", ipu_id=0)
        return self.inner(x)


def test_a_pipeline_refuses_activations_flowing_back_to_an_earlier_stage():
    class Back(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)

        def forward(self, x):
            with poptorch.Block("A", ipu_id=0):
                x = self.a(x)
            with poptorch.Block("B", ipu_id=1):
                y = self.b(x)
            with poptorch.Block("A", ipu_id=0):
                return x + y

    with pytest.raises(poptorch.Error, match=r"block 'B' \(stage 1\) feeds block 'A'.*earlier"):
        poptorch.inferenceModel(Back(), options(d=2)).compile(torch.randn(4, 4))


def test_gradients_go_back_with_the_size_of_what_a_stage_received():
    stages = [StageTimes(0, 1.0, 2.0, send=0.25, receive=0.0),
              StageTimes(1, 1.0, 2.0, send=0.0, receive=0.5)]
    costs = StepCosts(host_in=0.0, host_out=0.0, host_latency=0.0, update={})
    for kind in ("pipelined", "sharded"):
        copies = sorted({e.duration for e in call_timeline(kind, stages, costs, 3, 1, True)
                         if e.kind == "copy"})
        assert copies == [0.25, 0.5], kind  # activations up, their gradients back


def test_single_stage_pipelined_inference_returns_outputs_once_per_call():
    net = nn.Linear(1000, 1000)
    model = poptorch.inferenceModel(net, options(d=10))
    model.compile(torch.randn(10, 1000))
    host_out = [e for e in model.plan.timeline.events if e.kind == "host" and e.step is not None
                and e.start > 0 and e.duration > 0]
    outputs = sum(e.duration for e in host_out) - model.plan.step_costs.host_in * 10
    from ipu_tutorials.simulator.costs import HOST_STREAM_LATENCY
    once = 10 * 1000 * 4 / model.plan.config.system.host_bandwidth + HOST_STREAM_LATENCY
    assert outputs == pytest.approx(once)  # one transfer of the 10 outputs, one latency


def test_input_grouping_must_still_divide_the_replication_factor_when_wrapping():
    opts = poptorch.Options().replicationFactor(2)
    opts.inputReplicaGrouping(2, poptorch.CommGroupType.Consecutive)
    opts.replicationFactor(1)
    with pytest.raises(poptorch.Error, match=r"group size \(2\) must divide the replication "
                                             r"factor \(1\)"):
        poptorch.inferenceModel(nn.Linear(2, 2), opts)


def test_set_optimizer_applies_the_wrapping_checks_and_plans_again():
    net = nn.Linear(3, 2)
    model = poptorch.trainingModel(
        _Loss(net), options(), poptorch.optim.SGD(net.parameters(), lr=0.1))
    model(torch.randn(2, 3), torch.randn(2, 2))
    assert model.plan.memory[0].optimizer == 0
    with pytest.raises(ValueError, match="Nesterov"):
        model.setOptimizer(poptorch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9,
                                              nesterov=True))
    with pytest.raises(ValueError, match="not in the wrapped model"):
        model.setOptimizer(poptorch.optim.SGD(nn.Linear(3, 2).parameters(), lr=0.1))
    model.setOptimizer(poptorch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9))
    assert model.plan.memory[0].optimizer == model.plan.memory[0].weights


class _Loss(nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x, y):
        out = self.net(x)
        return out, nn.functional.mse_loss(out, y)


def test_a_dropped_training_wrapper_does_not_keep_the_model_wrapped():
    net = _Loss(nn.Linear(3, 2))
    poptorch.trainingModel(net)
    gc.collect()
    poptorch.trainingModel(net)  # the first wrapper is gone: no "already wrapped"


def test_latencies_split_a_call_at_its_first_and_last_ipu_work():
    model = poptorch.inferenceModel(nn.Linear(5, 3), options(d=4))
    model(torch.randn(8, 5))
    to_ipu, compute, to_host = (f()[0] for f in (model.getHostIpuLatency,
                                                 model.getComputeLatency,
                                                 model.getIpuHostLatency))
    assert to_ipu + compute + to_host == pytest.approx(model.plan.call_seconds)
    last_output = max((e for e in model.plan.timeline.events if e.kind == "host"
                       and e.step is not None), key=lambda e: e.start)
    assert to_host < 2 * (last_output.duration + model.plan.step_costs.host_latency)


def test_whole_calls_respects_the_pipeline_and_explains_impossible_sizes():
    assert tutorial.whole_calls(1000, 8) == 25
    assert tutorial.whole_calls(1000, 40, least=4) == 25
    with pytest.raises(ValueError, match=r"1000 samples in micro-batches of 500 make 2"):
        tutorial.whole_calls(1000, 500, least=4)
    with pytest.raises(ValueError, match="use a smaller batch size"):
        tutorial.whole_calls(4, 8)


def test_wrapping_something_that_is_not_a_module():
    with pytest.raises(TypeError, match="expected a torch.nn.Module to wrap, got function"):
        poptorch.trainingModel(lambda x: x)


def test_inference_weights_are_uploaded_when_compiling():
    net = nn.Linear(3, 2)
    model = poptorch.inferenceModel(net, options())
    x = torch.randn(1, 3)
    model.compile(x)
    compiled_with = net(x).detach()
    with torch.no_grad():
        net.weight.add_(1.0)  # trained on the CPU after compiling
    torch.testing.assert_close(model(x), compiled_with)


def test_sum_output_mode_passes_non_tensor_outputs_through():
    class Tagged(nn.Module):
        def forward(self, x):
            return x * 2, "tag"

    out, tag = poptorch.inferenceModel(Tagged(), options(d=3).outputMode(
        poptorch.OutputMode.Sum))(torch.ones(3, 2))
    assert tag == "tag" and torch.equal(out, torch.full((1, 2), 6.0))
