"""The Lightning-on-IPU limitations, refused before anything runs, each with what to do."""
from types import SimpleNamespace

import pytest
import torch

pl = pytest.importorskip("lightning.pytorch")

from lightning.pytorch.utilities.exceptions import MisconfigurationException  # noqa: E402

from ipu_tutorials.lightning._checks import (check_manual_optimization,  # noqa: E402
                                             check_optimizers, check_trainer)


class Module(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)


class Transfers(Module):
    def transfer_batch_to_device(self, batch, device, dataloader_idx):
        return batch


def trainer(clip=None, callbacks=()):
    return SimpleNamespace(datamodule=None, gradient_clip_val=clip, callbacks=list(callbacks))


def test_a_plain_module_and_trainer_pass():
    check_trainer(trainer(), Module())
    check_optimizers([torch.optim.SGD(Module().parameters(), lr=0.1)])


@pytest.mark.parametrize("settings, module, message", [
    (trainer(), Transfers(), r"Overriding `transfer_batch_to_device` is not supported with IPUs"),
    (trainer(clip=1.0), Module(), r"do not support clipping gradients \(Trainer\(gradient_clip_val=1.0\)\)"),
])
def test_each_limitation_is_refused_with_the_fix(settings, module, message):
    with pytest.raises(MisconfigurationException, match=message):
        check_trainer(settings, module)


def test_manual_optimization_is_refused():
    module = Module()
    module.automatic_optimization = False
    check_trainer(trainer(), module)  # refused later, after the one-optimizer rule (2.0.9's order)
    with pytest.raises(MisconfigurationException, match=r"do not support manual optimization"):
        check_manual_optimization(module)


def test_one_optimizer_and_not_lbfgs():
    params = list(Module().parameters())
    with pytest.raises(MisconfigurationException, match=r"only support one optimizer; "
                                                        r"configure_optimizers gave 2"):
        check_optimizers([torch.optim.SGD(params, lr=0.1)] * 2)
    with pytest.raises(MisconfigurationException, match=r"LBFGS optimizer are not compatible"):
        check_optimizers([torch.optim.LBFGS(params)])
