"""The cost model against runs Graphcore published (docs/cost-model.md, "Calibration against published runs").

Each published configuration must compile with the memory check on and land within the
accepted ratio of its published throughput; the rules and the host model behind the figures
are checked on the same plans.
"""
import dataclasses

import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.support import environment
from ipu_tutorials.errors import OutOfMemoryError
from ipu_tutorials.poptorch import _to_simulator
from ipu_tutorials.simulator import capture, compile_plan
from ipu_tutorials.calibration import published_runs
from ipu_tutorials.tutorial.loops import inference_options, training_options
from ipu_tutorials.tutorial.models import Network


@pytest.fixture(scope="module")
def tutorial():
    return published_runs.tutorial_run()


@pytest.fixture(scope="module")
def bert():
    return published_runs.bert_large_run()


@pytest.fixture(scope="module")
def resnet():
    return published_runs.resnet50_run()


def within(run) -> bool:
    assert run.tolerance == 1.1  # every calibration run: within 1.1x
    return 1 / run.tolerance <= run.ratio <= run.tolerance


def recompiled(run, **changes):
    return compile_plan(run.plan.graph, dataclasses.replace(run.plan.config, **changes))


def test_the_tutorial_run_lands_within_1_1x_of_60000_images_per_second(tutorial):
    assert tutorial.plan.memory.fits
    assert within(tutorial), tutorial.simulated


def test_the_tutorial_run_is_bound_by_the_host_as_its_published_trace_shows(tutorial):
    plan = tutorial.plan
    parts = plan.breakdown()
    assert sum(parts.values()) == pytest.approx(plan.call_seconds)
    assert parts["waiting for host data"] > parts["IPU compute"] + parts["exchange and sync"]
    # the trace: about 1.35 M cycles from one weight update to the next (one device iteration)
    device_cycles = parts["IPU compute"] + parts["exchange and sync"]
    per_iteration = device_cycles * plan.config.system.ipu.clock_hz / plan.config.device_iterations
    assert 1.35e6 / 1.5 < per_iteration < 1.35e6 * 1.5


def test_a_synchronous_loader_adds_the_host_data_to_the_device_time(tutorial):
    sync = recompiled(tutorial, loader_async=False)
    assert sync.call_seconds == pytest.approx(tutorial.plan.device_seconds
                                              + tutorial.plan.host_data_seconds
                                              + tutorial.plan.step_costs.instance_host)
    assert "before the device" in sync.breakdown_text()


def test_the_simulated_compile_time_matches_the_tutorials_published_bars(tutorial):
    """The pipelining tutorial's output: 'Graph compilation' took 1:31 for training and 0:35 for inference."""
    opts = inference_options(training_options("pipelined", 10, 10), 100)
    inference = compile_plan(capture(Network(), (torch.zeros(40, 1, 28, 28),), {}),
                             _to_simulator.options_spec(opts, False, None, environment.read(),
                                                        micro_batch=40))
    assert 91 / 1.25 < tutorial.plan.compile_seconds < 91 * 1.25
    assert 35 / 1.25 < inference.compile_seconds < 35 * 1.25
    assert "Simulated compile time" in tutorial.plan.describe()


def test_bert_large_as_published_fits_and_lands_within_1_1x_of_5600(bert):
    assert bert.plan.memory.fits
    assert within(bert), bert.simulated


def test_bert_large_runs_five_merged_stages_and_needs_accumulation_of_9(bert):
    stages = bert.plan.placement.stages
    assert [s.ipu for s in stages] == [0, 1, 2, 3, 0]  # head and pooler back on IPU 0
    assert len(stages[1].blocks) == 7  # seven one-layer blocks merged into one stage
    recompiled(bert, gradient_accumulation=9)
    with pytest.raises(poptorch.Error, match=r"number of pipeline stages \(9\).*it is 8"):
        recompiled(bert, gradient_accumulation=8)


def test_bert_large_stashes_only_checkpoints_for_2k_minus_1_micro_batches(bert):
    ipu1 = bert.plan.memory[1]
    checkpoint = 8 * 128 * 1024 * 2  # one layer's float16 output for a micro-batch of 8
    # stage 1 of K = 5 stashes 2(5-1-1)+1 = 7 micro-batches: its input and 7 checkpoints
    assert ipu1.stash == 7 * (checkpoint + 7 * checkpoint)


def test_resnet50_as_published_fits_and_lands_within_1_1x_of_42029(resnet):
    assert resnet.plan.memory.fits
    assert within(resnet), resnet.simulated


def test_resnet50_without_recomputation_does_not_fit_and_the_advice_says_so(resnet):
    with pytest.raises(OutOfMemoryError, match=r"recompute activations") as info:
        recompiled(resnet, recompute=False)
    message = str(info.value)
    assert "setPartialsType" not in message  # half partials are already on
    assert "model.half()" not in message  # the weights are already float16


def test_resnet50_on_one_host_process_is_bound_by_its_data_loading(resnet):
    # one host process driving all 16 replicas
    one_host = recompiled(resnet, replication_factor=16, instances=1)
    assert one_host.samples_per_second < resnet.plan.samples_per_second / 2
    assert "host-bound" in one_host.breakdown_text()


def test_bert_large_on_a_pod64_lands_within_1_1x_of_18442_and_gains_as_published(bert):
    pod64 = published_runs.bert_large_pod64_run()
    assert pod64.plan.memory.fits
    assert within(pod64), pod64.simulated
    gain = pod64.simulated / bert.simulated
    assert gain == pytest.approx(18_442 / 5_600, rel=0.05)  # not 4x: the host's instance work


def test_the_calibration_table_has_a_row_per_run(tutorial, bert, resnet):
    table = published_runs.calibration_table([tutorial, bert, resnet])
    assert table.count("\n") == 4 and "| 5,600 sequences/s |" in table
