"""The run the report tests look at: the tutorial network pipelined over 4 IPUs, one call."""
import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.tutorial.models import Network, TrainingModelWithLoss


@pytest.fixture
def trained():
    """Trains the tutorial network for one call under the given options (gradient
    accumulation 7, blocks B1..B4 pipelined on 4 IPUs); returns the training model."""
    def train(opts: poptorch.Options) -> poptorch.PoplarExecutor:
        opts.Training.gradientAccumulation(7)
        opts.setExecutionStrategy(poptorch.PipelinedExecution("B1", "B2", "B3", "B4"))
        model = poptorch.trainingModel(TrainingModelWithLoss(Network()), opts)
        n = 8 * 7 * opts.device_iterations
        model(torch.randn(n, 1, 28, 28), torch.randint(0, 10, (n,)))
        return model

    return train
