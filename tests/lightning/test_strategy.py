"""IPUStrategy: options from the Trainer, the stages, the numerics, reports, data loaders."""
import json
import os

import pytest
import torch

import lightning.pytorch as pl
from ipu_tutorials import poptorch
from ipu_tutorials.lightning import IPUStrategy, RealIPUWarning


def fit(Tiny, loader, trainer_kwargs, **kwargs):
    model = Tiny(**kwargs.pop("module", {}))
    trainer = pl.Trainer(**{**trainer_kwargs, **kwargs})
    trainer.fit(model, loader())
    return model, trainer


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_fit_matches_plain_pytorch_with_the_same_accumulation(Tiny, loader, trainer_kwargs,
                                                              optimizer):
    # 64 samples; each call: micro-batch 4 x device iterations 2 x accumulation 2 x replicas 2
    model, trainer = fit(Tiny, loader, trainer_kwargs, devices=2, accumulate_grad_batches=2,
                         strategy=IPUStrategy(device_iterations=2), module={"optimizer": optimizer})
    assert trainer.global_step == 2  # one Lightning step per IPU call
    reference = Tiny(optimizer=optimizer)
    opt = reference.configure_optimizers()
    for x, y in loader(batch_size=16):  # each IPU update averages 2 x 2 micro-batches of 4
        opt.zero_grad()
        torch.nn.functional.cross_entropy(reference(x), y).backward()
        opt.step()
    for ours, theirs in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-5)


def scheduled(Tiny):
    """Tiny's SGD with a scheduler that halves the learning rate after every step."""
    def configure_optimizers(self):
        optimizer = Tiny.configure_optimizers(self)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}
    return type("Scheduled", (Tiny,), {"configure_optimizers": configure_optimizers})


def test_a_scheduler_reaches_the_ipu_as_the_real_strategy_pushes_it(Tiny, loader, trainer_kwargs):
    # was wrong: the scheduler's new rate stayed on the host, the IPU kept the first one
    Scheduled = scheduled(Tiny)
    model = Scheduled()
    trainer = pl.Trainer(**trainer_kwargs, devices=1)
    trainer.fit(model, loader())
    reference = Scheduled()
    opt = reference.configure_optimizers()["optimizer"]
    scheduler = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    for x, y in loader():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(reference(x), y).backward()
        opt.step()
        scheduler.step()
    for ours, theirs in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-5)


def test_default_options_come_from_the_trainer(Tiny, loader, trainer_kwargs):
    pl.seed_everything(7)
    model, trainer = fit(Tiny, loader, trainer_kwargs, devices=4, accumulate_grad_batches=2,
                         strategy=IPUStrategy(device_iterations=2))
    training, inference = trainer.strategy.training_opts, trainer.strategy.inference_opts
    assert (training.replication_factor, training.device_iterations,
            training.Training.gradient_accumulation, training.random_seed) == (4, 2, 2, 7)
    assert (inference.replication_factor, inference.device_iterations,
            inference.Training.gradient_accumulation) == (4, 2, 1)
    assert trainer.accumulate_grad_batches == 2  # restored after fit
    assert trainer.train_dataloader.combinedBatchSize == 4 * 4 * 2 * 2


def test_user_options_win_and_a_user_poptorch_loader_is_kept(Tiny, loader, trainer_kwargs):
    opts = poptorch.Options().deviceIterations(4)
    opts.Training.gradientAccumulation(1)
    user_loader = poptorch.DataLoader(opts, loader().dataset, batch_size=2)
    model = Tiny()
    trainer = pl.Trainer(**trainer_kwargs, devices=1, accumulate_grad_batches=3,
                         strategy=IPUStrategy(training_opts=opts))
    trainer.fit(model, user_loader)
    assert trainer.strategy.training_opts is opts
    assert trainer.train_dataloader is user_loader
    assert trainer.global_step == 64 // 8


def test_each_stage_uses_its_own_executor(Tiny, loader, trainer_kwargs):
    model = Tiny()
    trainer = pl.Trainer(**{**trainer_kwargs, "num_sanity_val_steps": 1}, devices=2,
                         strategy=IPUStrategy(device_iterations=2))
    with pytest.warns(RealIPUWarning, match="on_validation_batch_end"):
        trainer.fit(model, loader(), loader())
    assert "val_loss" in trainer.callback_metrics
    # OutputMode.Final, as on real IPUs: the last micro-batch's loss of each replica
    assert len(model.train_losses) == 64 // 16 and model.train_losses[0].shape == (2,)
    with pytest.warns(RealIPUWarning, match="on_test_batch_end"):
        (tested,) = trainer.test(model, loader())
    expected = (model(loader(batch_size=64).dataset.tensors[0]).argmax(-1)
                == loader().dataset.tensors[1]).float().mean()
    assert tested["test_acc"] == pytest.approx(expected.item(), abs=1e-6)
    predictions = trainer.predict(model, loader())
    assert len(predictions) == 4 and predictions[0].shape == (16, 3)  # R x D x micro-batch rows
    torch.testing.assert_close(torch.cat(predictions), model(loader().dataset.tensors[0]),
                               atol=1e-5, rtol=1e-5)
    (validated,) = trainer.validate(model, loader())
    assert validated["val_loss"] > 0


def test_the_executors_wrap_the_steps(Tiny, loader, trainer_kwargs):
    seen = {}

    class Spy(IPUStrategy):
        def on_train_start(self):
            super().on_train_start()
            seen.update({s.value: m for s, m in self.poptorch_models.items()})

    model = Tiny()
    pl.Trainer(**{**trainer_kwargs, "num_sanity_val_steps": 1}, devices=1,
               strategy=Spy()).fit(model, loader(), loader())
    # a trainingModel for fit, inferenceModels otherwise (`training` is the module's flag, as
    # in PopTorch)
    assert seen["train"]._training and not seen["validate"]._training
    assert seen["sanity_check"] is seen["validate"]


def set_up_for(trainer, fn, stage=None):
    """Run the strategy's set-up for one Trainer function, as Lightning does before a stage."""
    trainer.state.fn, trainer.state.stage = fn, stage
    trainer.strategy.setup(trainer)
    return list(trainer.strategy.poptorch_models)


def attached_trainer(Tiny, trainer_kwargs, strategy, **kwargs):
    model = Tiny()
    trainer = pl.Trainer(**{**trainer_kwargs, **kwargs}, strategy=strategy)
    model.trainer = trainer
    strategy._lightning_module = model
    trainer.strategy.optimizers = [model.configure_optimizers()]
    return trainer


def test_each_trainer_function_sets_up_only_its_own_models(Tiny, trainer_kwargs):
    from lightning.pytorch.trainer.states import RunningStage as S, TrainerFn as F
    trainer = attached_trainer(Tiny, trainer_kwargs, IPUStrategy(), devices=2,
                               num_sanity_val_steps=2)
    assert set_up_for(trainer, F.FITTING) == [S.TRAINING, S.VALIDATING, S.SANITY_CHECKING]
    for fn, stage in ((F.VALIDATING, S.VALIDATING), (F.TESTING, S.TESTING),
                      (F.PREDICTING, S.PREDICTING)):
        assert set_up_for(trainer, fn, stage) == [stage]
    trainer.strategy.teardown()


def test_no_sanity_model_without_sanity_steps(Tiny, trainer_kwargs):
    from lightning.pytorch.trainer.states import RunningStage as S, TrainerFn as F
    trainer = attached_trainer(Tiny, trainer_kwargs, IPUStrategy(), devices=1)
    assert set_up_for(trainer, F.FITTING) == [S.TRAINING, S.VALIDATING]
    trainer.strategy.teardown()


def test_the_replication_factor_is_the_current_stages(Tiny, trainer_kwargs):
    from lightning.pytorch.trainer.states import RunningStage as S, TrainerFn as F
    training, inference = poptorch.Options(), poptorch.Options()
    training.replicationFactor(4)
    inference.replicationFactor(2)
    strategy = IPUStrategy(training_opts=training, inference_opts=inference)
    trainer = attached_trainer(Tiny, trainer_kwargs, strategy, devices=1)
    assert strategy.replication_factor == 4  # before set-up: the training options come first
    set_up_for(trainer, F.FITTING)
    trainer.state.stage = S.TRAINING
    assert strategy.replication_factor == 4
    trainer.state.stage = S.VALIDATING
    assert strategy.replication_factor == 2
    strategy.teardown()


def test_stepping_batches_before_set_up_count_the_loaders_own_batches(Tiny, loader,
                                                                      trainer_kwargs):
    # as Lightning 2.0.9: the loader becomes a poptorch.DataLoader only at set-up
    model = Tiny()
    model.train_dataloader = lambda: loader(n=64, batch_size=2)
    trainer = pl.Trainer(**trainer_kwargs, devices=2)
    trainer._data_connector.attach_data(model)
    trainer.strategy.connect(model)
    assert trainer.estimated_stepping_batches == 32


def test_last_incomplete_batch_is_dropped_with_a_warning(Tiny, loader, trainer_kwargs):
    with pytest.warns(UserWarning, match="70 samples; each IPU call takes 4, so the last 2 are not used"):
        fit(Tiny, lambda: loader(n=70), trainer_kwargs, devices=1)


@pytest.mark.parametrize("flags", [dict(autoreport_dir="REPORTS"), dict(autoreport=True)])
def test_autoreport_writes_the_simulators_reports(Tiny, loader, trainer_kwargs, tmp_path,
                                                   monkeypatch, flags):
    monkeypatch.chdir(tmp_path)
    without_engine_options(monkeypatch)  # autoreport=True sets them
    model = Tiny()
    trainer = pl.Trainer(**trainer_kwargs, devices=2, strategy=IPUStrategy(**flags))
    trainer.fit(model, loader(), loader())
    base = tmp_path / flags.get("autoreport_dir", "")
    for stage in ("training", "validation"):
        summary = json.loads((base / stage / "summary.json").read_text())
        assert summary["batching"]["replicas"] == 2
        assert os.path.exists(base / stage / "trace.json")
    assert json.loads((base / "training" / "summary.json").read_text())["training"] is True


def without_engine_options(monkeypatch):
    """No POPLAR_ENGINE_OPTIONS now, and none after the test (set + delete: both undone)."""
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", "{}")
    monkeypatch.delenv("POPLAR_ENGINE_OPTIONS")


def test_autoreport_sets_poplar_engine_options_as_lightning_2_0_9_does(tmp_path, monkeypatch):
    # was wrong: no variable was set; 2.0.9's IPUStrategy.__init__ sets it for autoreport=True
    without_engine_options(monkeypatch)
    IPUStrategy(autoreport_dir=str(tmp_path / "alone"))  # 2.0.9: the directory alone sets nothing
    assert "POPLAR_ENGINE_OPTIONS" not in os.environ
    IPUStrategy(autoreport=True)
    assert json.loads(os.environ["POPLAR_ENGINE_OPTIONS"]) == {"autoReport.all": True}
    reports = str(tmp_path / "reports/")
    IPUStrategy(autoreport=True, autoreport_dir=reports)
    assert json.loads(os.environ["POPLAR_ENGINE_OPTIONS"]) == {
        "autoReport.all": True, "autoReport.directory": reports}
    assert os.path.isdir(reports)  # made at once, as 2.0.9 does


def test_no_report_without_autoreport(Tiny, loader, trainer_kwargs, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fit(Tiny, loader, trainer_kwargs, devices=1, strategy=IPUStrategy())
    assert not (tmp_path / "training").exists()


def test_strategy_arguments_are_checked():
    with pytest.raises(ValueError, match="device_iterations=0"):
        IPUStrategy(device_iterations=0)
    with pytest.raises(TypeError, match="takes a poptorch.Options, got dict"):
        IPUStrategy(training_opts={})
