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
