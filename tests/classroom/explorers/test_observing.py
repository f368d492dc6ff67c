"""The report explorer driven headless: its panels are a saved and reloaded report's."""
import matplotlib
import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.classroom.explorers.observing import compiled_report, report_explorer
from ipu_tutorials.tutorial import training_options
from ipu_tutorials.tutorial.models import Network, TrainingModelWithLoss

matplotlib.use("Agg")


def figure_bytes(explorer) -> str:
    return explorer.output.outputs[0]["data"]["image/png"]


def test_the_report_is_the_runtime_plan_after_a_round_trip_through_disk():
    opts = training_options("sharded", 2, 8, output_all=False).showCompilationProgressBar(False)
    net = Network()
    model = poptorch.trainingModel(TrainingModelWithLoss(net), opts,
                                   poptorch.optim.SGD(net.parameters(), lr=0.01))
    model.compile(torch.zeros(256, 1, 28, 28), torch.zeros(256, dtype=torch.long))
    report = compiled_report("sharded", 2, 8)
    assert report.summary["schedule"]["call_seconds"] == model.plan.call_seconds
    assert [m["total"] for m in report.memory] == [m.total for m in model.plan.memory.ipus]
    assert len(report.events) == len(model.plan.timeline.events)


@pytest.mark.parametrize("control, value", [("strategy", "sharded"), ("device_iterations", 8),
                                            ("accumulation", 32)])
def test_each_control_changes_the_text_and_the_figure(control, value):
    explorer = report_explorer()
    text, png = explorer.text, figure_bytes(explorer)
    explorer.controls[control].value = value
    assert explorer.text != text and figure_bytes(explorer) != png


def test_the_text_splits_the_call_as_the_report_does():
    explorer = report_explorer("pipelined", 1, 8)
    breakdown = compiled_report("pipelined", 1, 8).summary["schedule"]["breakdown"]
    share = breakdown["IPU compute"] / sum(breakdown.values())
    assert f"IPU compute {share:.0%}" in explorer.text
    assert "Fullest IPU: IPU 0" in explorer.text


def test_sharding_computes_a_larger_share_of_a_host_bound_call_than_pipelining():
    """Sharded IPUs wait for each other, so the call's compute share is the union of one IPU
    at a time; pipelined IPUs overlap theirs. Both calls are bound by the host's data."""
    def compute_share(strategy):
        parts = compiled_report(strategy, 8, 8).summary["schedule"]["breakdown"]
        return parts["IPU compute"] / sum(parts.values())

    assert compute_share("sharded") > compute_share("pipelined")
