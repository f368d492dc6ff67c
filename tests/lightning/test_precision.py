"""IPUPrecision: 32-bit, mixed and pure 16-bit, and the precisions IPUs refuse."""
import pytest
import torch

import lightning.pytorch as pl

from ipu_tutorials.lightning import IPUPrecision, IPUStrategy


class RecordsDtypes:
    """Mix-in: remember the dtype of the batch and weights each training step saw."""

    def training_step(self, batch, batch_idx):
        if not batch[0].is_meta:  # the simulator's planning pass runs on meta tensors
            self.seen = (batch[0].dtype, self.layer.weight.dtype)
        return super().training_step(batch, batch_idx)


def fit(Tiny, loader, trainer_kwargs, precision, half=False):
    model = type("Recorder", (RecordsDtypes, Tiny), {})()
    if half:
        model = model.half()
    trainer = pl.Trainer(**trainer_kwargs, devices=1, precision=precision)
    trainer.fit(model, loader())
    return model, trainer


def test_32_bit_keeps_everything_in_float32(Tiny, loader, trainer_kwargs):
    model, trainer = fit(Tiny, loader, trainer_kwargs, "32-true")
    assert trainer.precision_plugin.precision == "32-true"
    assert model.seen == (torch.float32, torch.float32)


def test_precision_16_is_mixed_inputs_cast_on_the_host(Tiny, loader, trainer_kwargs):
    model, trainer = fit(Tiny, loader, trainer_kwargs, 16)
    assert isinstance(trainer.precision_plugin, IPUPrecision)
    assert trainer.precision_plugin.precision == "16-mixed"
    assert model.seen == (torch.float16, torch.float32)
    assert model.layer.weight.dtype == torch.float32


def test_model_half_with_precision_16_is_pure_16_bit(Tiny, loader, trainer_kwargs):
    model, _ = fit(Tiny, loader, trainer_kwargs, "16-mixed", half=True)
    assert model.seen == (torch.float16, torch.float16)
    assert model.layer.weight.dtype == torch.float16


def test_16_true_converts_the_module(Tiny, loader, trainer_kwargs):
    model, _ = fit(Tiny, loader, trainer_kwargs, "16-true")
    assert model.seen == (torch.float16, torch.float16)


def test_mixed_precision_weights_follow_autocast_float16_training(Tiny, loader, trainer_kwargs):
    model, _ = fit(Tiny, loader, trainer_kwargs, "16-mixed")
    reference = Tiny()
    optimizer = reference.configure_optimizers()
    for x, y in loader():
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.float16):
            loss = torch.nn.functional.cross_entropy(reference(x.half()), y)
        loss.backward()
        optimizer.step()
    for ours, theirs in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("precision", ["bf16-mixed", "bf16-true", "64-true"])
def test_precisions_ipus_lack_are_refused(trainer_kwargs, precision):
    with pytest.raises(ValueError, match=rf"precision='{precision}'\)` is not supported.*"
                                         r"'32-true', '16-mixed', '16-true'"):
        pl.Trainer(**trainer_kwargs, devices=1, precision=precision)


def test_a_strategy_given_lightnings_own_plugin_converts_it():
    strategy = IPUStrategy()
    strategy.precision_plugin = pl.plugins.precision.HalfPrecision("16-true")
    assert isinstance(strategy.precision_plugin, IPUPrecision)
    assert strategy.precision_plugin.precision == "16-true"
    assert IPUStrategy().precision_plugin.precision == "32-true"


def test_a_plugin_given_to_the_strategy_is_kept(trainer_kwargs):
    plugin = IPUPrecision("16-mixed")
    trainer = pl.Trainer(**trainer_kwargs, devices=1, strategy=IPUStrategy(precision_plugin=plugin))
    assert trainer.precision_plugin is plugin
