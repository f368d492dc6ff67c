"""Each known limitation of Lightning on IPUs is a clear error that says what to do instead."""
import pytest
import torch

import lightning.pytorch as pl
from lightning.pytorch.callbacks import GradientAccumulationScheduler
from lightning.pytorch.utilities.exceptions import MisconfigurationException

from ipu_tutorials.lightning import IPUStrategy


def run(model, trainer_kwargs, loader, **kwargs):
    pl.Trainer(**{**trainer_kwargs, "devices": 1, **kwargs}).fit(model, loader())


def test_gradient_clipping_is_refused(Tiny, loader, trainer_kwargs):
    with pytest.raises(MisconfigurationException, match=r"do not support clipping gradients.*"
                                                        r"gradient_clip_val=0\.5"):
        run(Tiny(), trainer_kwargs, loader, gradient_clip_val=0.5)


def test_clip_gradients_called_in_a_hook_is_refused(Tiny, loader, trainer_kwargs):
    class Clips(Tiny):
        def configure_gradient_clipping(self, optimizer, gradient_clip_val=None,
                                        gradient_clip_algorithm=None):
            self.clip_gradients(optimizer, gradient_clip_val=1.0)

    with pytest.raises(MisconfigurationException, match=r"clip_val=1\.0"):
        run(Clips(), trainer_kwargs, loader)


# with manual optimization the one-optimizer rule is still named first, as in Lightning 2.0.9
@pytest.mark.parametrize("automatic, count", [(True, "several"), (False, "2")])
def test_more_than_one_optimizer_is_refused(Tiny, loader, trainer_kwargs, automatic, count):
    class Two(Tiny):
        def __init__(self):
            super().__init__()
            self.automatic_optimization = automatic

        def configure_optimizers(self):
            return [torch.optim.SGD(self.parameters(), lr=0.1),
                    torch.optim.SGD(self.parameters(), lr=0.2)]

    with pytest.raises(MisconfigurationException, match="IPUs currently only support one "
                                                        f"optimizer; configure_optimizers gave {count}"):
        run(Two(), trainer_kwargs, loader)


def test_manual_optimization_is_refused(Tiny, loader, trainer_kwargs):
    class Manual(Tiny):
        def __init__(self):
            super().__init__()
            self.automatic_optimization = False

    with pytest.raises(MisconfigurationException, match="do not support manual optimization"):
        run(Manual(), trainer_kwargs, loader)


def test_lbfgs_is_refused(Tiny, loader, trainer_kwargs):
    class UsesLBFGS(Tiny):
        def configure_optimizers(self):
            return torch.optim.LBFGS(self.parameters())

    with pytest.raises(MisconfigurationException, match="LBFGS optimizer are not compatible"):
        run(UsesLBFGS(), trainer_kwargs, loader)


def test_training_step_returning_none_is_refused(Tiny, loader, trainer_kwargs):
    class Skips(Tiny):
        def training_step(self, batch, batch_idx):
            torch.nn.functional.cross_entropy(self(batch[0]), batch[1])
            return None

    with pytest.raises(MisconfigurationException, match="returning `None` from your "
                                                        "`training_step` is not implemented"):
        run(Skips(), trainer_kwargs, loader)


@pytest.mark.parametrize("hook", ["transfer_batch_to_device", "on_after_batch_transfer"])
def test_overridden_batch_transfer_hooks_are_refused(Tiny, loader, trainer_kwargs, hook):
    overridden = type("Overrides", (Tiny,), {hook: lambda self, batch, *args: batch})
    with pytest.raises(MisconfigurationException,
                       match=f"Overriding `{hook}` is not supported with IPUs"):
        run(overridden(), trainer_kwargs, loader)


def test_batch_sampler_with_several_devices_is_refused(Tiny, loader, trainer_kwargs):
    dataset = loader().dataset
    sampler = torch.utils.data.BatchSampler(torch.utils.data.SequentialSampler(dataset), 8, True)
    with pytest.raises(MisconfigurationException, match=r"batch sampler .*\(Replication factor 2"):
        pl.Trainer(**trainer_kwargs, devices=2).fit(
            Tiny(), torch.utils.data.DataLoader(dataset, batch_sampler=sampler))


def test_batch_sampler_with_one_device_is_used(Tiny, loader, trainer_kwargs):
    dataset = loader().dataset
    sampler = torch.utils.data.BatchSampler(torch.utils.data.SequentialSampler(dataset), 8, True)
    trainer = pl.Trainer(**trainer_kwargs, devices=1)
    trainer.fit(Tiny(), torch.utils.data.DataLoader(dataset, batch_sampler=sampler))
    assert trainer.global_step == 64 // 8


@pytest.mark.parametrize("devices, fix", [(3, "devices=2 or devices=4"), (6, "devices=4 or devices=8")])
def test_device_count_must_be_a_power_of_two(trainer_kwargs, devices, fix):
    with pytest.raises(MisconfigurationException, match=f"powers of two .*{fix}"):
        pl.Trainer(**{**trainer_kwargs, "devices": devices})


def test_changing_accumulation_between_epochs_is_refused(Tiny, loader, trainer_kwargs):
    # refused where Lightning 2.0.9 refused it: the scheduler's on_train_start, a RuntimeError
    with pytest.raises(RuntimeError, match="`IPUAccelerator` does not support `accumulate_grad_"
                                           "batches` changing between epochs"):
        run(Tiny(), trainer_kwargs, loader,
            callbacks=[GradientAccumulationScheduler(scheduling={0: 1, 1: 2})])


def test_self_log_in_a_step_runs_but_warns_about_real_ipus(Tiny, loader, trainer_kwargs):
    class Logs(Tiny):
        def training_step(self, batch, batch_idx):
            loss = super().training_step(batch, batch_idx)
            self.log("train_loss", loss)
            return loss

    trainer = pl.Trainer(**trainer_kwargs, devices=1, strategy=IPUStrategy())
    with pytest.warns(UserWarning, match=r"`self.log` in `training_step` works in the simulator"
                                         r".*not on real IPUs.*on_train_batch_end"):
        trainer.fit(Logs(), loader())
    assert trainer.callback_metrics["train_loss"] > 0
