"""LightningStep: the step function is the traced model; logging is noted once (a real IPU
traces the step), skipped on the planning pass, and a training step must return a loss."""
import copy
import warnings

import pytest
import torch

pl = pytest.importorskip("lightning.pytorch")

from lightning.pytorch.utilities.exceptions import MisconfigurationException  # noqa: E402

from ipu_tutorials.lightning._steps import LightningStep, RealIPUWarning  # noqa: E402


class Module(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)
        self.logged = []

    def log(self, name, value, **kwargs):
        self.logged.append((name, value))

    def training_step(self, batch):
        loss = (batch * 2).sum()  # no weights: the planning pass may feed meta tensors
        self.log("loss", loss)
        return loss

    def validation_step(self, batch):
        return None


def test_the_step_runs_the_modules_step_and_its_parameters_are_the_modules():
    module = Module()
    step = LightningStep(module, "training_step")
    assert copy.deepcopy(step)._live() is module  # a copy still calls the live module
    with pytest.warns(RealIPUWarning):
        assert torch.equal(step(torch.ones(3, 2)), torch.tensor(12.0))
    assert list(step.parameters()) == list(module.parameters())
    with pytest.raises(ValueError, match=r"unknown step 'train_step'"):
        LightningStep(module, "train_step")


def test_logging_is_noted_once_and_skipped_on_the_planning_pass():
    module = Module()
    step = LightningStep(module, "training_step")
    with pytest.warns(RealIPUWarning, match=r"`self.log` in `training_step` works in the "
                                            r"simulator .* log it in `on_train_batch_end`"):
        step(torch.ones(1, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        step(torch.ones(1, 2))
        step(torch.ones(1, 2, device="meta"))
    assert len(module.logged) == 2  # the meta pass logged nothing
    assert "log" not in module.__dict__  # the original method is back


def test_a_training_step_must_return_its_loss():
    step = LightningStep(Module(), "training_step")
    step.module.training_step = lambda batch: None
    with pytest.raises(MisconfigurationException, match=r"returning `None` from your "
                                                        r"`training_step` is not implemented"):
        step(torch.ones(1, 2))
    assert LightningStep(Module(), "validation_step")(torch.ones(1, 2)) is None
