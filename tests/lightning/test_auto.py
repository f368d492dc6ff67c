"""With IPU_TUTORIALS_AUTO_IPU=1 the simulated IPUs count as present, as real ones did in 2.0.9."""
import pytest

import lightning.pytorch as pl
from lightning.pytorch.callbacks import GradientAccumulationScheduler

from ipu_tutorials.lightning import IPUAccelerator, IPUStrategy, _auto


@pytest.fixture
def offered(monkeypatch):
    monkeypatch.setenv(_auto.ENV_AUTO, "1")


QUIET = dict(logger=False, enable_checkpointing=False, enable_progress_bar=False,
             enable_model_summary=False)


def test_auto_keeps_lightnings_choice_without_the_opt_in(monkeypatch):
    monkeypatch.delenv(_auto.ENV_AUTO, raising=False)
    trainer = pl.Trainer(accelerator="auto", devices="auto", **QUIET)
    assert not isinstance(trainer.accelerator, IPUAccelerator)


def test_auto_accelerator_and_devices_pick_four_simulated_ipus(offered):
    trainer = pl.Trainer(accelerator="auto", devices="auto", **QUIET)
    assert isinstance(trainer.accelerator, IPUAccelerator)
    assert isinstance(trainer.strategy, IPUStrategy)
    assert trainer.num_devices == 4


def test_auto_accelerator_takes_an_explicit_device_count(offered):
    trainer = pl.Trainer(accelerator="auto", devices=8, **QUIET)
    assert isinstance(trainer.accelerator, IPUAccelerator) and trainer.num_devices == 8


def test_an_ipu_strategy_alone_implies_the_ipu_accelerator(monkeypatch):
    monkeypatch.delenv(_auto.ENV_AUTO, raising=False)
    trainer = pl.Trainer(strategy=IPUStrategy(), devices=2, **QUIET)
    assert isinstance(trainer.accelerator, IPUAccelerator)


def test_choosing_the_cpu_while_ipus_are_offered_warns(offered):
    with pytest.warns(UserWarning, match=r"IPU available but not used\. Set `accelerator` and "
                                         r"`devices` using `Trainer\(accelerator='ipu', devices=4"):
        pl.Trainer(accelerator="cpu", **QUIET)


def test_no_warning_when_the_ipus_are_used(offered, recwarn):
    pl.Trainer(accelerator="ipu", devices=1, **QUIET)
    assert not [w for w in recwarn if "IPU available but not used" in str(w.message)]


def test_the_accumulation_scheduler_refuses_ipus_when_training_starts(Tiny):
    trainer = pl.Trainer(accelerator="ipu", devices=1, **QUIET)
    scheduler = GradientAccumulationScheduler({1: 2})
    with pytest.raises(RuntimeError, match="`IPUAccelerator` does not support "
                                           "`accumulate_grad_batches` changing between epochs"):
        scheduler.on_train_start(trainer, Tiny())
