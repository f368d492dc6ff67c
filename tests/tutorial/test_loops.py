"""The tutorial's training and test loops and their helpers."""
import pytest
import torch

from ipu_tutorials import poptorch, tutorial
from ipu_tutorials.tutorial import loops
from ipu_tutorials.tutorial.models import Network, TrainingModelWithLoss


def test_whole_calls_respects_the_pipeline_and_explains_impossible_sizes():
    # was wrong: whole_calls ignored the pipeline's minimum and failed with a bare max() error.
    assert tutorial.whole_calls(1000, 8) == 25
    assert tutorial.whole_calls(1000, 40, least=4) == 25
    with pytest.raises(ValueError, match=r"1000 samples in micro-batches of 500 make 2"):
        tutorial.whole_calls(1000, 500, least=4)
    with pytest.raises(ValueError, match="use a smaller batch size"):
        tutorial.whole_calls(4, 8)


@pytest.mark.parametrize("strategy", ["pipelined", "sharded"])
def test_training_options_are_the_pipelining_walkthroughs_for_either_strategy(strategy):
    # lesson 5 says so: deviceIterations 10, accumulation 10 and OutputMode.All for both
    opts = loops.training_options(strategy, device_iterations=10, gradient_accumulation=10)
    assert (opts.device_iterations, opts.Training.gradient_accumulation) == (10, 10)
    assert opts.output_mode == poptorch.OutputMode.All


def test_mnist_pipelines_sharded_run_trains_micro_batches_of_the_loaders_whole_step():
    # Graphcore's mnist_pipeline.py (examples v3.4.1) batches its loader for accumulation 10
    # but sets none when sharding: PopTorch splits the call by device iterations alone
    # (_narrow_tensor), so each micro-batch holds 10 x 40 images (lesson 5)
    loader_opts = poptorch.Options().deviceIterations(10)
    loader_opts.Training.gradientAccumulation(10)
    model_opts = poptorch.Options().deviceIterations(10).showCompilationProgressBar(False)
    model_opts.setExecutionStrategy(loops.strategy("sharded"))
    model = poptorch.trainingModel(TrainingModelWithLoss(Network()), model_opts)
    batch = 40 * loader_opts.device_iterations * loader_opts.Training.gradient_accumulation
    model.compile(torch.zeros(batch, 1, 28, 28), torch.zeros(batch, dtype=torch.long))
    assert model.plan.spec.micro_batch == 400
