"""Compile: step costs and the timeline of one call."""
import pytest
import torch
import torch.nn as nn

from ipu_tutorials import poptorch


def test_single_stage_pipelined_inference_returns_outputs_once_per_call(options):
    # was wrong: one-stage pipelined inference paid the output transfer D times per call.
    net = nn.Linear(1000, 1000)
    model = poptorch.inferenceModel(net, options(d=10))
    model.compile(torch.randn(10, 1000))
    host_out = [e for e in model.plan.timeline.events if e.kind == "host" and e.step is not None
                and e.start > 0 and e.duration > 0]
    outputs = sum(e.duration for e in host_out) - model.plan.step_costs.host_in * 10
    from ipu_tutorials.simulator.costs import HOST_STREAM_LATENCY
    once = 10 * 1000 * 4 / model.plan.config.system.host_bandwidth + HOST_STREAM_LATENCY
    assert outputs == pytest.approx(once)  # one transfer of the 10 outputs, one latency
