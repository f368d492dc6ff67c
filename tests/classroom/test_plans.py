"""Plans without data: the helper explorers and exercises share gives the runtime's own plan."""
import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.classroom.plans import plan_on_meta, tutorial_plan
from ipu_tutorials.tutorial.models import Network, TrainingModelWithLoss

BLOCKS = poptorch.PipelinedExecution("B1", "B2", "B3", "B4")


def meta_batch(samples):
    return (torch.empty(samples, 1, 28, 28, device="meta"),
            torch.empty(samples, dtype=torch.long, device="meta"))


def test_the_plan_is_the_one_the_runtime_compiles():
    opts = poptorch.Options().setExecutionStrategy(BLOCKS).showCompilationProgressBar(False)
    opts.Training.gradientAccumulation(8)
    with torch.device("meta"):
        model = TrainingModelWithLoss(Network())
    direct = poptorch.trainingModel(model, opts, poptorch.optim.AdamW(model.parameters()))
    direct.compile(*meta_batch(40 * 8))
    assert tutorial_plan(BLOCKS).call_seconds == direct.plan.call_seconds


def test_the_model_is_free_to_wrap_again_even_after_an_error():
    with torch.device("meta"):
        model = TrainingModelWithLoss(Network())
    opts = poptorch.Options().setExecutionStrategy(BLOCKS)
    opts.Training.gradientAccumulation(3)  # too few for 4 pipelined stages
    with pytest.raises(poptorch.Error, match="must be at least 7; it is 3"):
        plan_on_meta(model, opts, poptorch.optim.SGD(model.parameters(), lr=0.1), *meta_batch(24))
    opts = poptorch.Options().setExecutionStrategy(BLOCKS)
    opts.Training.gradientAccumulation(7)
    plan = plan_on_meta(model, opts, poptorch.optim.SGD(model.parameters(), lr=0.1),
                        *meta_batch(56))
    assert len(plan.placement.stages) == 4
