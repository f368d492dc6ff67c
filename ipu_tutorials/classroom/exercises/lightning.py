"""Exercises of lesson 14: PyTorch Lightning on IPUs."""
from __future__ import annotations

import tempfile
import warnings

import torch

from .base import Exercise, Feedback, Mistake, check_number, right, wrong

MICRO_BATCH, DEVICES, ACCUMULATE, DEVICE_ITERATIONS = 16, 4, 8, 2
# The first line of exercise 14.3's answer cell: the class to change, as the lesson showed it.
CLASSIFIER = "Classifier = exercises.Classifier  # logs inside its training_step"


def _check_images(answer) -> Feedback:
    images = MICRO_BATCH * DEVICES * ACCUMULATE * DEVICE_ITERATIONS
    return check_number(
        answer, images, "the images in one Lightning batch",
        f"{MICRO_BATCH} per micro-batch x {DEVICES} replicas (devices) x {ACCUMULATE} accumulated "
        f"micro-batches x {DEVICE_ITERATIONS} device iterations = {images:,}: the "
        f"poptorch.DataLoader the strategy builds hands Lightning whole IPU calls.",
        typical={
            images // DEVICES: f"devices={DEVICES} are {DEVICES} replicas, each taking its own "
                               f"micro-batches: multiply by them too.",
            images // DEVICE_ITERATIONS: f"one IPU call runs {DEVICE_ITERATIONS} device "
                                         f"iterations, each a full weight update: multiply by "
                                         f"them too.",
            images // ACCUMULATE: "each weight update accumulates accumulate_grad_batches "
                                  "micro-batches per replica: multiply by them too.",
            MICRO_BATCH: "that is the DataLoader's batch_size, one micro-batch; the strategy "
                         "rebatches it into whole IPU calls.",
        })


images_per_batch = Exercise(
    "Images per Lightning batch", _check_images,
    expects='a number',
    skill='relate a Lightning batch to IPU calls',
    hint="the DataLoader's batch_size is the micro-batch; each of devices, "
         "accumulate_grad_batches and device_iterations repeats it.",
    solution="my_images = 16 * 4 * 8 * 2  # = 1024",
    mistakes=(Mistake("16 * 8 * 2", "multiply by them too"),
              Mistake("16 * 4 * 8", "device iterations"),
              Mistake("16", "the DataLoader's batch_size")))


def _classifier_class():
    import lightning.pytorch as pl

    class Classifier(pl.LightningModule):
        """4 features -> 3 classes; logs inside training_step, which real IPUs cannot trace."""

        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.layer = torch.nn.Linear(4, 3)

        def forward(self, x):
            return self.layer(x)

        def training_step(self, batch, batch_idx):
            x, y = batch
            loss = torch.nn.functional.cross_entropy(self(x), y)
            self.log("train_loss", loss)
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    return Classifier


def lesson_namespace() -> dict:
    """What the lesson defines before its exercises: Lightning as `pl`, `IPUStrategy`, the
    Trainer arguments `QUIET` that keep its output short and `exercises`; and the `Classifier`
    that exercise 14.3's starting code names."""
    import sys

    import lightning.pytorch as pl

    from ...lightning import IPUStrategy
    quiet = dict(logger=False, enable_checkpointing=False, enable_progress_bar=False,
                 enable_model_summary=False)
    return {"pl": pl, "IPUStrategy": IPUStrategy, "QUIET": quiet,
            "exercises": sys.modules[__name__], "Classifier": _classifier_class()}


def __getattr__(name: str):
    # Built on first use, so importing the exercises does not import Lightning.
    if name == "Classifier":
        return _classifier_class()
    raise AttributeError(name)


def _digits(n: int = 64):
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(n, 4, generator=generator)
    y = torch.randint(0, 3, (n,), generator=generator)
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=4)


def _fit(module_class):
    """Fit the learner's class for one epoch on the simulated IPU; returns (trainer, warnings,
    the loss each training step returned)."""
    import lightning.pytorch as pl

    losses = []

    class StepLosses(pl.Callback):
        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            losses.append(float(outputs["loss"].float().mean()))

    with tempfile.TemporaryDirectory() as logs, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer = pl.Trainer(accelerator="ipu", devices=1, max_epochs=1, default_root_dir=logs,
                             logger=False, enable_checkpointing=False, enable_progress_bar=False,
                             enable_model_summary=False, callbacks=[StepLosses()])
        trainer.fit(module_class(), _digits())
    return trainer, caught, losses


def _check_logging(module_class) -> Feedback:
    from ...lightning import RealIPUWarning

    if not isinstance(module_class, type):
        return wrong("pass the class itself (LoggedOnHost), not an instance of it.")
    try:
        trainer, caught, losses = _fit(module_class)
    except Exception as error:  # the learner's code: show whatever went wrong
        return wrong(f"training failed: {type(error).__name__}: {error}")
    if any(issubclass(w.category, RealIPUWarning) for w in caught):
        return wrong("`self.log` is still called inside training_step; the simulator allows it, "
                     "but a real IPU traces the step and cannot. Log in on_train_batch_end.")
    if "train_loss" not in trainer.callback_metrics:
        return wrong("nothing was logged as 'train_loss': in on_train_batch_end, call "
                     "self.log('train_loss', outputs['loss'].mean()).")
    logged = float(trainer.callback_metrics["train_loss"])
    # the last step's loss, or the epoch's mean of them (self.log(..., on_epoch=True))
    expected = (losses[-1], sum(losses) / len(losses)) if losses else ()
    if not any(abs(logged - value) <= 1e-4 * max(1.0, abs(value)) for value in expected):
        return wrong(f"train_loss is {logged:.4f}, but the last training step returned a loss "
                     f"of {losses[-1]:.4f}: log the loss the step returned, which "
                     f"on_train_batch_end receives as outputs['loss'].")
    return right(f"training_step only computes; on_train_batch_end logged train_loss = "
                 f"{logged:.4f} from the step's output, which works on real IPUs too.")


log_outside_the_step = Exercise(
    "Log where a real IPU can", _check_logging,
    expects='a LightningModule subclass (the class itself)',
    skill='move logging out of a traced training_step',
    starting_code=f'{CLASSIFIER}\n\n\nclass LoggedOnHost(Classifier):\n    pass',
    hint="training_step returns the loss; Lightning passes it to "
         "on_train_batch_end(self, outputs, batch, batch_idx) as outputs['loss'] (one value per "
         "replica: take the mean).",
    solution=f"""
{CLASSIFIER}


class LoggedOnHost(Classifier):
    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.cross_entropy(self(x), y)

    def on_train_batch_end(self, outputs, batch, batch_idx):
        self.log("train_loss", outputs["loss"].mean())""",
    mistakes=(
        Mistake("Classifier", "still called inside training_step"),
        Mistake("class LogsNothing(Classifier):\n"
                "    def training_step(self, batch, batch_idx):\n"
                "        x, y = batch\n"
                "        return torch.nn.functional.cross_entropy(self(x), y)",
                "nothing was logged"),
        Mistake("Classifier()", "the class itself"),
    ),
    writes_code=True)


def planned_options(trainer) -> tuple[int, int, int]:
    """(replicas, accumulation, device iterations) the Trainer's IPUStrategy will train with:
    from the training options you gave it, else from devices, the Trainer's
    accumulate_grad_batches and the strategy's device_iterations (as Lightning 2.0.9 builds)."""
    strategy = trainer.strategy
    given = strategy._user_training_opts  # the strategy keeps your options as they are
    if given is not None:
        return (given.replication_factor, given.Training.gradient_accumulation,
                given.device_iterations)
    return (trainer.num_devices, trainer.accumulate_grad_batches, strategy.device_iterations)


def _check_trainer(trainer) -> Feedback:
    from ...lightning import IPUStrategy

    if not hasattr(trainer, "strategy") or not hasattr(trainer, "accumulate_grad_batches"):
        return wrong(f"expected a lightning.pytorch.Trainer, got {type(trainer).__name__}.")
    strategy = trainer.strategy
    if not isinstance(strategy, IPUStrategy):
        return wrong(f"the Trainer uses {type(strategy).__name__}: set accelerator='ipu'.")
    replicas, accumulation, iterations = planned_options(trainer)
    source = ("your training_opts" if strategy._user_training_opts is not None
              else "the Trainer's arguments")
    if replicas == 8:
        return wrong(f"{source} ask for 8 replicas: devices (or replicationFactor) counts "
                     f"replicas, not IPUs; the 4-IPU pipeline is one replica: how many of them "
                     f"do 8 IPUs hold?")
    if replicas != 2:
        return wrong(f"{source} give {replicas} replica(s) of the 4-IPU model: count how many "
                     f"fit in 8 IPUs.")
    if iterations != 4:
        return wrong(f"{source} give {iterations} device iteration(s): 4 weight updates per IPU "
                     f"call are IPUStrategy(device_iterations=4) (or deviceIterations(4) in "
                     f"your options).")
    if (accumulation != 8 and strategy._user_training_opts is not None
            and trainer.accumulate_grad_batches == 8):
        return wrong(f"your training_opts accumulate {accumulation} micro-batch(es): with options "
                     f"given, the strategy takes the accumulation from them, not from the "
                     f"Trainer's accumulate_grad_batches; set Training.gradientAccumulation(8).")
    if accumulation != 8:
        return wrong(f"{source} accumulate {accumulation} micro-batch(es): each update averages "
                     f"8 micro-batches per replica (accumulate_grad_batches=8, or "
                     f"Training.gradientAccumulation(8) in your options).")
    return right("2 replicas x 4 IPUs, 8 micro-batches per update, 4 updates per call: "
                 "IPUStrategy trains with replicationFactor(2), gradientAccumulation(8) and "
                 "deviceIterations(4).")


trainer_for_the_job = Exercise(
    "A Trainer for 8 IPUs", _check_trainer,
    expects='a lightning.pytorch.Trainer',
    skill='configure Trainer and IPUStrategy for replicas, accumulation, device iterations',
    hint="devices is the number of replicas; accumulate_grad_batches is a Trainer argument; "
         "device_iterations belongs to IPUStrategy.",
    solution="""
my_trainer = pl.Trainer(accelerator="ipu", devices=2, accumulate_grad_batches=8,
                        strategy=IPUStrategy(device_iterations=4), **QUIET)""",
    mistakes=(
        Mistake("pl.Trainer(accelerator='ipu', devices=8, accumulate_grad_batches=8, "
                "strategy=IPUStrategy(device_iterations=4), max_epochs=1)",
                "counts replicas, not IPUs"),
        Mistake("pl.Trainer(accelerator='ipu', devices=2, accumulate_grad_batches=8, max_epochs=1)",
                "IPUStrategy(device_iterations=4)"),
        Mistake("pl.Trainer(accelerator='cpu', devices=1, max_epochs=1)", "accelerator='ipu'"),
        Mistake("pl.Trainer(accelerator='ipu', devices=2, strategy=IPUStrategy("
                "device_iterations=4), max_epochs=1)", "accumulate 1 micro-batch"),
    ))
