"""IPUPrecisionPlugin: 32-bit, mixed and pure 16-bit, and the precisions IPUs refuse."""
import pytest
import torch

import lightning.pytorch as pl

from ipu_tutorials.lightning import IPUPrecisionPlugin, IPUStrategy


class RecordsDtypes:
    """Mix-in: remember the dtype of the batch and weights each training step saw."""

    def training_step(self, batch, batch_idx):
        if not batch[0].is_meta:  # the simulator's planning pass runs on meta tensors
            self.seen = (batch[0].dtype, self(batch[0]).dtype, self.layer.weight.dtype)
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
    assert model.seen == (torch.float32, torch.float32, torch.float32)


def test_precision_16_is_mixed_inputs_cast_on_the_host(Tiny, loader, trainer_kwargs):
    model, trainer = fit(Tiny, loader, trainer_kwargs, 16)
    assert isinstance(trainer.precision_plugin, IPUPrecisionPlugin)
    assert trainer.precision_plugin.precision == "16-mixed"
    # was wrong: the batch was upcast before the step; PopTorch 3.x hands forward the float16
    # batch and types each op (nn.Linear on a 2-D batch with its bias promotes to float32)
    assert model.seen == (torch.float16, torch.float32, torch.float32)
    assert model.layer.weight.dtype == torch.float32


def test_model_half_with_precision_16_is_pure_16_bit(Tiny, loader, trainer_kwargs):
    model, _ = fit(Tiny, loader, trainer_kwargs, "16-mixed", half=True)
    assert model.seen == (torch.float16, torch.float16, torch.float16)
    assert model.layer.weight.dtype == torch.float16


def test_16_true_converts_the_module(Tiny, loader, trainer_kwargs):
    model, _ = fit(Tiny, loader, trainer_kwargs, "16-true")
    assert model.seen == (torch.float16, torch.float16, torch.float16)


def test_mixed_precision_weights_follow_float32_training_on_float16_rounded_inputs(
        Tiny, loader, trainer_kwargs):
    model, _ = fit(Tiny, loader, trainer_kwargs, "16-mixed")
    reference = Tiny()
    optimizer = reference.configure_optimizers()
    for x, y in loader():
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(reference(x.half().float()), y)
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
    assert isinstance(strategy.precision_plugin, IPUPrecisionPlugin)
    assert strategy.precision_plugin.precision == "16-true"
    assert IPUStrategy().precision_plugin.precision == "32-true"


def test_a_plugin_given_to_the_strategy_is_kept(trainer_kwargs):
    plugin = IPUPrecisionPlugin("16-mixed")
    trainer = pl.Trainer(**trainer_kwargs, devices=1, strategy=IPUStrategy(precision_plugin=plugin))
    assert trainer.precision_plugin is plugin


# --- a Lightning half step is the PopTorch half step, bit for bit ------------------------------
class HalfNet(torch.nn.Module):
    """A convolution and a linear layer: float16 matmuls, convolutions and a loss."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(1, 3, 3)
        self.fc = torch.nn.Linear(3 * 6 * 6, 4)

    def forward(self, x, y):
        out = self.fc(torch.relu(self.conv(x)).flatten(1))
        return torch.nn.functional.cross_entropy(out, y)


class LightningHalfNet(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = HalfNet()

    def training_step(self, batch, batch_idx):
        return self.net(*batch)

    def configure_optimizers(self):
        return half_optimizer(self.parameters())


def half_optimizer(params):
    from ipu_tutorials import poptorch
    return poptorch.optim.AdamW(params, lr=0.01, accum_type=torch.float16, loss_scaling=128.0,
                                first_order_momentum_accum_type=torch.float16)


def half_batches(n=4, batch=4):
    generator = torch.Generator().manual_seed(5)
    x = torch.randn(n * batch, 1, 8, 8, generator=generator)
    y = torch.randint(0, 4, (n * batch,), generator=generator)
    return torch.utils.data.TensorDataset(x, y)


@pytest.mark.parametrize("precision", ["16-true", "16-mixed"])
def test_lightning_half_training_equals_poptorch_bit_for_bit(trainer_kwargs, precision):
    """Lightning's 16-bit paths run the same float16 emulation as a PopTorch training model."""
    from ipu_tutorials import poptorch

    lightning = LightningHalfNet()
    trainer = pl.Trainer(**trainer_kwargs, devices=1, precision=precision)
    trainer.fit(lightning, torch.utils.data.DataLoader(half_batches(), batch_size=4))

    reference = HalfNet()
    if precision == "16-true":
        reference.half()
    opts = poptorch.Options().showCompilationProgressBar(False)
    training = poptorch.trainingModel(reference, opts, half_optimizer(reference.parameters()))
    for x, y in torch.utils.data.DataLoader(half_batches(), batch_size=4):
        training(x.half(), y)
    for ours, theirs in zip(lightning.net.parameters(), reference.parameters()):
        assert ours.dtype == theirs.dtype == {"16-true": torch.float16,
                                              "16-mixed": torch.float32}[precision]
        assert torch.equal(ours.detach(), theirs.detach())
    assert not torch.equal(lightning.net.fc.weight.detach(), HalfNet().fc.weight.to(ours.dtype))


def test_the_plugin_has_lightning_2_0_9s_class_name():
    # was wrong: the plugin's class was named IPUPrecision (lightning-graphcore's name), so a
    # Trainer printed it under that name where Lightning 2.0.9 names it IPUPrecisionPlugin
    import lightning.pytorch as pl

    from ipu_tutorials.lightning import IPUPrecisionPlugin

    trainer = pl.Trainer(accelerator="ipu", devices=8, precision=16, logger=False,
                         enable_checkpointing=False, enable_progress_bar=False)
    assert type(trainer.precision_plugin).__name__ == "IPUPrecisionPlugin"
    assert isinstance(trainer.precision_plugin, IPUPrecisionPlugin)
    assert trainer.precision_plugin.precision == "16-mixed"
    import ipu_tutorials.lightning as ipu_lightning
    assert not hasattr(ipu_lightning, "IPUPrecision")  # lightning-graphcore's name, not 2.0.9's
