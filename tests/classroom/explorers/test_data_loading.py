"""The data-loading explorer driven headless: its numbers are the runtime's."""
import matplotlib
import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.classroom import data_loading_explorer
from ipu_tutorials.classroom.explorers.data_loading import (DigitClassifier, combined_batch,
                                                            plan_call, share)
from ipu_tutorials.tutorial.datasets import embedded_digits

matplotlib.use("Agg")


def figure_bytes(explorer) -> str:
    return explorer.output.outputs[0]["data"]["image/png"]


def loader_plan(device_iterations, micro_batch, loader, replicas=1):
    """The same run trained for one call on real digits from a poptorch.DataLoader."""
    opts = poptorch.Options().deviceIterations(device_iterations).replicationFactor(replicas)
    opts.showCompilationProgressBar(False)
    model = DigitClassifier()
    training = poptorch.trainingModel(model, opts, torch.optim.SGD(model.parameters(), lr=0.01))
    data = poptorch.DataLoader(opts, embedded_digits(), batch_size=micro_batch,
                               mode=poptorch.DataLoaderMode[loader])
    training(*next(iter(data)))
    data.terminate()
    return training.plan


@pytest.mark.parametrize("loader", ["Async", "Sync"])
def test_the_explorer_shows_what_a_real_loader_and_model_would_do(loader):
    explorer = data_loading_explorer(device_iterations=2, micro_batch=8, loader=loader)
    plan = loader_plan(2, 8, loader)
    shown = explorer.result["plan"]
    assert shown.call_seconds == pytest.approx(plan.call_seconds)
    assert shown.breakdown() == pytest.approx(plan.breakdown())
    assert f"{plan.samples_per_second:,.0f} images/s" in explorer.text
    assert f"host I/O {share(plan):.1%}" in explorer.text


def test_more_device_iterations_shrink_the_host_io_share_and_redraw():
    explorer = data_loading_explorer(device_iterations=1)
    before_text, before_png = explorer.text, figure_bytes(explorer)
    before = share(explorer.result["plan"])
    explorer.controls["device_iterations"].value = 16
    assert explorer.text != before_text and figure_bytes(explorer) != before_png
    assert share(explorer.result["plan"]) < before / 2
    assert "512 images per call" in explorer.text


def test_a_sync_loader_makes_the_device_wait_for_the_whole_preparation():
    explorer = data_loading_explorer(device_iterations=16, loader="Async")
    fast = explorer.result["plan"]
    explorer.controls["loader"].value = "Sync"
    slow = explorer.result["plan"]
    handover = slow.step_costs.instance_host  # the host process's own work on the call's inputs
    assert slow.breakdown()["waiting for host data"] == pytest.approx(slow.host_data_seconds
                                                                      + handover)
    assert slow.samples_per_second < fast.samples_per_second
    assert slow.call_seconds == pytest.approx(fast.device_seconds + fast.host_data_seconds
                                              + handover)


@pytest.mark.parametrize("control, value", [("micro_batch", 64), ("replicas", 2)])
def test_micro_batch_and_replicas_change_the_call(control, value):
    explorer = data_loading_explorer(device_iterations=4)
    before = explorer.result["plan"].spec.samples_per_call
    explorer.controls[control].value = value
    assert explorer.result["plan"].spec.samples_per_call == before * value // (
        32 if control == "micro_batch" else 1)


def test_one_host_process_feeding_more_replicas_becomes_host_bound():
    explorer = data_loading_explorer(device_iterations=16, micro_batch=32, replicas=1)
    assert share(explorer.result["plan"], "waiting for host data") < 0.3
    explorer.controls["replicas"].value = 4
    assert share(explorer.result["plan"], "waiting for host data") > 0.5
    assert "host-bound" in explorer.text


def test_plan_call_sizes_the_batch_as_the_dataloader_does():
    opts = poptorch.Options().deviceIterations(3).replicationFactor(2)
    opts.Training.gradientAccumulation(2)
    loader = poptorch.DataLoader(opts, embedded_digits(), batch_size=4)
    assert combined_batch(opts, 4) == loader.combinedBatchSize == 48
    assert plan_call(opts, micro_batch=4).spec.micro_batch == 4
    with pytest.raises(ValueError, match=r"unknown loader mode 'Fast'; choose one of Async, Sync"):
        plan_call(opts, loader="Fast")
