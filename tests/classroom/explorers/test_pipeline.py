"""The pipeline explorer driven headless: its numbers are the runtime's."""
import matplotlib
import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.classroom import pipeline_explorer
from ipu_tutorials.classroom.explorers.pipeline import StageStack, pipeline_options

matplotlib.use("Agg")


def figure_bytes(explorer) -> str:
    return explorer.output.outputs[0]["data"]["image/png"]


def runtime_plan(ipus, accumulation, device_iterations, imbalance, strategy):
    """The same configuration wrapped and compiled directly with poptorch."""
    with torch.device("meta"):
        model = StageStack(ipus, imbalance)
    opts = pipeline_options(ipus, accumulation, device_iterations, strategy)
    training = poptorch.trainingModel(model, opts, poptorch.optim.SGD(model.parameters(), lr=0.01))
    data = torch.empty(16 * accumulation * device_iterations, 512, device="meta")
    training.compile(data, data)
    return training.plan


def test_pipeline_explorer_redraws_and_matches_the_runtime():
    explorer = pipeline_explorer(ipus=4, accumulation=8)
    before_text, before_png = explorer.text, figure_bytes(explorer)
    explorer.controls["accumulation"].value = 32
    assert explorer.text != before_text and figure_bytes(explorer) != before_png
    plan = runtime_plan(4, 32, 1, 0.0, "pipelined")
    assert explorer.result["plan"].samples_per_second == plan.samples_per_second
    assert f"{plan.samples_per_second:,.0f} samples/s" in explorer.text
    assert "38 cycles per step (fill 6, main 26, flush 6)" in explorer.text


@pytest.mark.parametrize("control, value", [("ipus", 8), ("device_iterations", 3),
                                            ("imbalance", 1.5), ("strategy", "sharded")])
def test_every_pipeline_control_reaches_the_runtime(control, value):
    explorer = pipeline_explorer(ipus=4, accumulation=16)
    before = explorer.result["plan"].device_samples_per_second
    explorer.controls[control].value = value
    values = explorer.values
    assert explorer.result["plan"].samples_per_second == runtime_plan(**values).samples_per_second
    assert explorer.result["plan"].device_samples_per_second != before


def test_pipeline_explorer_shows_the_rule_it_breaks():
    explorer = pipeline_explorer(ipus=4, accumulation=8)
    explorer.controls["accumulation"].value = 3
    assert "gradient accumulation must be at least 7; it is 3" in explorer.text
    assert explorer.output.outputs == ()


def test_sharding_keeps_one_ipu_busy_in_the_explorer():
    explorer = pipeline_explorer(ipus=4, accumulation=8, strategy="sharded")
    assert explorer.result["plan"].timeline.max_concurrency() == 1
