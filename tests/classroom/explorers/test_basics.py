"""The step explorer driven headless: its numbers are the compiled plan's."""
import matplotlib
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.classroom.explorers.basics import (DEVICE_ITERATIONS, DigitClassifierWithLoss,
                                                      step_cost, step_explorer)

matplotlib.use("Agg")


def figure_bytes(explorer) -> str:
    return explorer.output.outputs[0]["data"]["image/png"]


def plan_of(batch_size, device_iterations):
    """The same configuration compiled directly with poptorch, on real (zero) tensors."""
    model = DigitClassifierWithLoss()
    opts = poptorch.Options().deviceIterations(device_iterations).showCompilationProgressBar(False)
    training = poptorch.trainingModel(model, opts, poptorch.optim.SGD(model.parameters(), lr=0.1))
    samples = batch_size * device_iterations
    training.compile(torch.zeros(samples, 1, 28, 28), torch.zeros(samples, dtype=torch.long))
    return training.plan


def test_the_explorer_shows_the_compiled_plan_and_redraws_on_every_control():
    explorer = step_explorer(batch_size=16, device_iterations=1)
    plan = plan_of(16, 1)
    assert explorer.result["cost"].call_seconds == plan.call_seconds
    assert f"{plan.samples_per_second:,.0f} samples/s" in explorer.text
    for control, value in (("device_iterations", 8), ("batch_size", 64)):
        before_text, before_png = explorer.text, figure_bytes(explorer)
        explorer.controls[control].value = value
        assert explorer.text != before_text and figure_bytes(explorer) != before_png
    assert explorer.result["cost"].samples_per_second == plan_of(64, 8).samples_per_second
    assert "batch 64 x 8 device iteration(s) = 512 samples per call" in explorer.text


def test_more_device_iterations_spread_the_host_cost_over_more_samples():
    costs = [step_cost(DigitClassifierWithLoss, 16, d) for d in DEVICE_ITERATIONS]
    per_sample_io = [c.parts["host I/O"] / c.samples_per_call for c in costs]
    assert per_sample_io == sorted(per_sample_io, reverse=True)
    assert costs[-1].samples_per_second > costs[0].samples_per_second
    # the IPU's own compute per sample does not depend on how many steps a call runs
    compute = [c.parts["IPU compute"] / c.samples_per_call for c in costs]
    assert max(compute) - min(compute) < 1e-3 * max(compute)


def test_the_parts_add_up_to_the_call():
    cost = step_cost(DigitClassifierWithLoss, 4, 2)
    assert abs(sum(cost.parts.values()) - cost.call_seconds) < 1e-12
