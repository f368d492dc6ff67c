"""Latencies, perf counters and cycles: simulated time split the way PopTorch reports it."""
import pytest
import torch
import torch.nn as nn

from ipu_tutorials import poptorch
from ipu_tutorials.errors import Error


def test_compilation_time_is_the_simulated_compile_and_needs_the_progress_bar():
    quiet = poptorch.inferenceModel(nn.Linear(5, 3),
                                    poptorch.Options().showCompilationProgressBar(False))
    timed = poptorch.inferenceModel(nn.Linear(5, 3))
    for model in (quiet, timed):
        with pytest.raises(Error, match=r"^Please compile the model before obtaining "
                                        r"compilation time\.$"):
            model.compilationTime()
    quiet(torch.randn(2, 5))
    with pytest.raises(Error, match=r"^Please set showCompilationProgressBar option to "
                                    r"obtain compilation time\.$"):
        quiet.compilationTime()
    timed(torch.randn(2, 5))
    assert timed.compilationTime().total_seconds() == pytest.approx(timed.plan.compile_seconds)
    assert timed.compilationTime().total_seconds() >= 10  # a Poplar compile takes seconds


def test_latencies_split_a_call_at_its_first_and_last_ipu_work(options):
    # was wrong: IPU-to-host latency counted every host event after the first IPU work.
    model = poptorch.inferenceModel(nn.Linear(5, 3), options(d=4))
    model(torch.randn(8, 5))
    to_ipu, compute, to_host = (f()[0] for f in (model.getHostIpuLatency,
                                                 model.getComputeLatency,
                                                 model.getIpuHostLatency))
    assert to_ipu + compute + to_host == pytest.approx(model.plan.call_seconds)
    last_output = max((e for e in model.plan.timeline.events if e.kind == "host"
                       and e.step is not None), key=lambda e: e.start)
    assert to_host < 2 * (last_output.duration + model.plan.step_costs.host_latency)


class LinearWithLoss(nn.Module):
    """Two inputs, two outputs: the prediction and its loss."""

    def __init__(self):
        super().__init__()
        self.linear, self.loss = nn.Linear(4, 4), nn.MSELoss()

    def forward(self, data, target):
        out = self.linear(data)
        return out, self.loss(out, target)


def entries(counters: dict) -> dict:
    """{key: [entries of each tensor]}: the shape of getPerfCounters()."""
    return {key: [len(per_tensor) for per_tensor in value] for key, value in counters.items()}


@pytest.mark.parametrize("mode, period, returned", [
    (poptorch.OutputMode.All, None, 2 * 3 * 2), (poptorch.OutputMode.Final, None, 2),
    (poptorch.OutputMode.Sum, None, 2), (poptorch.OutputMode.EveryN, 2, 1 * 3 * 2)])
def test_counters_have_an_entry_per_streamed_tensor_and_micro_batch(options, mode, period,
                                                                      returned):
    # d=2 device iterations of a=3 micro-batches on r=2 replicas: every input is streamed 12
    # times; the outputs as often as the output mode returns them.
    model = poptorch.trainingModel(LinearWithLoss(), options(d=2, a=3, r=2, mode=mode,
                                                             period=period))
    model(torch.randn(24, 4), torch.randn(24, 4))
    shape = entries(model.getPerfCounters())
    assert shape["input"] == shape["input_complete"] == [12, 12]
    assert shape["output"] == shape["output_complete"] == [returned, returned]


def test_counters_follow_each_device_iteration_in_order(options):
    model = poptorch.inferenceModel(LinearWithLoss(), options(d=3))
    model(torch.randn(3, 4), torch.randn(3, 4))
    counters, start = model.getPerfCounters(), model.plan.call_seconds
    model(torch.randn(3, 4), torch.randn(3, 4))  # the counters describe the last call
    counters = model.getPerfCounters()
    for step in range(3):
        stamps = [counters[key][0][step]
                  for key in ("input", "input_complete", "output", "output_complete")]
        assert stamps == sorted(stamps)
        if step:
            assert stamps[0] >= counters["output_complete"][0][step - 1]
    assert counters["input"][0][0] == pytest.approx(start)
    assert counters["output_complete"][1][-1] == pytest.approx(2 * model.plan.call_seconds)


def test_synthetic_data_streams_nothing_so_has_no_counters(options):
    model = poptorch.inferenceModel(LinearWithLoss(), options(d=2).enableSyntheticData(True))
    model(torch.randn(2, 4), torch.randn(2, 4))
    assert entries(model.getPerfCounters()) == {
        "input": [0, 0], "input_complete": [0, 0], "output": [0, 0], "output_complete": [0, 0]}
    assert model.getLatency() == model.getHostIpuLatency() == (0.0, 0.0, 0.0)
