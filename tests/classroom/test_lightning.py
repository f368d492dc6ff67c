"""Lesson 14's exercises (every solution passes, typical mistakes get specific feedback) and explorer."""
import pytest
import torch

pl = pytest.importorskip("lightning.pytorch")

from ipu_tutorials import poptorch  # noqa: E402
from ipu_tutorials.classroom.exercises import lightning as exercises  # noqa: E402
from ipu_tutorials.classroom.explorers.lightning import lightning_call, lightning_explorer  # noqa: E402
from ipu_tutorials.lightning import IPUStrategy  # noqa: E402

QUIET = dict(logger=False, enable_checkpointing=False, enable_progress_bar=False,
             enable_model_summary=False)


def test_images_per_batch():
    assert exercises.images_per_batch.check(16 * 4 * 8 * 2)
    feedback = exercises.images_per_batch.check(16 * 8 * 2)  # forgot the replicas
    assert not feedback and "too low" in feedback.message


def test_trainer_for_the_job(tmp_path):
    kwargs = dict(QUIET, default_root_dir=str(tmp_path))
    solution = pl.Trainer(accelerator="ipu", devices=2, accumulate_grad_batches=8,
                          strategy=IPUStrategy(device_iterations=4), **kwargs)
    assert exercises.trainer_for_the_job.check(solution)
    counted_ipus = pl.Trainer(accelerator="ipu", devices=8, accumulate_grad_batches=8,
                              strategy=IPUStrategy(device_iterations=4), **kwargs)
    assert "counts replicas, not IPUs" in exercises.trainer_for_the_job.check(counted_ipus).message
    no_iterations = pl.Trainer(accelerator="ipu", devices=2, accumulate_grad_batches=8, **kwargs)
    assert "IPUStrategy(device_iterations=4)" in exercises.trainer_for_the_job.check(
        no_iterations).message
    cpu = pl.Trainer(accelerator="cpu", devices=1, **kwargs)
    assert "accelerator='ipu'" in exercises.trainer_for_the_job.check(cpu).message
    assert not exercises.trainer_for_the_job.check("trainer")


def test_log_outside_the_step():
    Classifier = exercises.Classifier

    class LoggedOnHost(Classifier):
        def training_step(self, batch, batch_idx):
            x, y = batch
            return torch.nn.functional.cross_entropy(self(x), y)

        def on_train_batch_end(self, outputs, batch, batch_idx):
            self.log("train_loss", outputs["loss"].mean())

    class LogsNothing(Classifier):
        def training_step(self, batch, batch_idx):
            x, y = batch
            return torch.nn.functional.cross_entropy(self(x), y)

    assert exercises.log_outside_the_step.check(LoggedOnHost)
    assert "still called inside training_step" in exercises.log_outside_the_step.check(
        Classifier).message
    assert "nothing was logged" in exercises.log_outside_the_step.check(LogsNothing).message
    assert "the class itself" in exercises.log_outside_the_step.check(LoggedOnHost()).message


def test_explorer_uses_the_strategys_options():
    result = lightning_call(devices=2, accumulate_grad_batches=8, device_iterations=2,
                            batch_size=16)
    opts = result["options"]
    assert (opts.replication_factor, opts.Training.gradient_accumulation,
            opts.device_iterations) == (2, 8, 2)
    assert result["combined"] == 16 * 2 * 8 * 2
    assert result["plan"].config.samples_per_call == result["combined"]
    with pytest.raises(poptorch.Error, match="gradient accumulation must be at least 7"):
        lightning_call(accumulate_grad_batches=2)
    explorer = lightning_explorer()
    assert "512 images" in explorer.text
    explorer.controls["accumulate_grad_batches"].value = 2
    assert "at least 7" in explorer.text
