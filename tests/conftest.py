"""Shared fixtures: seeded randomness, a fresh simulated system, options, the tutorial models."""
import os

import pytest
import torch

import ipu_tutorials
from ipu_tutorials import poptorch
from ipu_tutorials.tutorial.models import Network, TrainingModelWithLoss


def pytest_configure(config):
    """Under pytest-xdist each worker takes its share of the cores for torch's threads, its own
    and those of the notebooks' kernels and the processes it starts (OMP_NUM_THREADS, which
    they inherit, unless a test sets its own), so that the workers do not each run a thread per
    core. Stored outputs do not depend on the thread count (.ci/kernel-sets checks 1 and 2)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1:
        share = max(1, torch.get_num_threads() // workers)
        torch.set_num_threads(share)
        os.environ.setdefault("OMP_NUM_THREADS", str(share))


@pytest.fixture(autouse=True)
def seed():
    """Every test starts from the same random state and the default simulated system."""
    torch.manual_seed(0)
    ipu_tutorials.reset_system()
    yield
    ipu_tutorials.reset_system()


@pytest.fixture
def mnist_like():
    """A call's worth of MNIST-shaped data: 2 x 7 micro-batches of 8."""
    return torch.randn(112, 1, 28, 28), torch.randint(0, 10, (112,))


@pytest.fixture
def cnn():
    """The tutorial's network and its training wrapper."""
    net = Network()
    return net, TrainingModelWithLoss(net)


@pytest.fixture
def options():
    """A factory of Options by their counts: options(d, a, r, mode, period).

    d device iterations, a gradient accumulation, r replicas; mode and period set outputMode.
    The compilation progress bar is off, so test output stays readable.
    """
    def make(d: int = 1, a: int = 1, r: int = 1, mode=None, period=None) -> poptorch.Options:
        opts = poptorch.Options().showCompilationProgressBar(False)
        opts.deviceIterations(d).replicationFactor(r)
        opts.Training.gradientAccumulation(a)
        if mode is not None:
            opts.outputMode(mode, period)
        return opts

    return make
