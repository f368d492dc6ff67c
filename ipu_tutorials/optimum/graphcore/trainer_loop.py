"""IPUTrainer's training loop: epochs of IPU calls, logging, evaluation and checkpoints by callbacks."""
from __future__ import annotations

import logging
import math
import time
import warnings

import torch
from transformers.trainer_utils import TrainOutput, has_length, speed_metrics

from . import trainer_checkpoints as ckpt
from .trainer_checkpoints import IPUTrainerState

logger = logging.getLogger("optimum.graphcore.trainer")


def _loss_of(outputs) -> torch.Tensor:
    """optimum's rule: outputs["loss"] for a model output, else the first output."""
    if isinstance(outputs, dict):
        return outputs["loss"]
    return outputs[0] if isinstance(outputs, (tuple, list)) else outputs


class TrainingLoop:
    """One call to IPUTrainer.train(): a step is one call of the training executor.

    Letters: S steps per epoch (calls per pass over the data), M the maximum steps.
    """

    def __init__(self, trainer, checkpoint: str | None, ignore_keys_for_eval):
        self.trainer, self.args = trainer, trainer.args
        self.checkpoint, self.ignore_keys_for_eval = checkpoint, ignore_keys_for_eval
        self.loader = trainer.get_train_dataloader()
        self.steps_per_epoch = len(self.loader) if has_length(self.loader) else None  # S
        self.max_steps, self.epochs = self._length()
        self.total_loss = self.logged_loss = 0.0
        self.last_logged_step = 0

    def _length(self) -> tuple[int, int]:
        """(M, epochs): args.max_steps wins; otherwise num_train_epochs x S."""
        per_step = f"{self.args.per_device_train_batch_size} x {self.trainer.ipu_config.batch_size_factor()}"
        if self.steps_per_epoch == 0:
            raise ValueError(f"the training set is smaller than one combined batch ({per_step} "
                             f"samples per step); lower the batch size or the IPUConfig's "
                             f"replication, accumulation or device iterations")
        if self.args.max_steps > 0:
            if self.steps_per_epoch is None:  # an iterable dataset: run until max_steps
                return self.args.max_steps, 10**9
            return self.args.max_steps, math.ceil(self.args.max_steps / self.steps_per_epoch)
        if self.steps_per_epoch is None:
            raise ValueError("the training set has no length: set max_steps")
        return (math.ceil(self.args.num_train_epochs * self.steps_per_epoch),
                math.ceil(self.args.num_train_epochs))

    def _start_state(self) -> tuple[int, int]:
        """(epochs already trained, steps already trained in the current epoch)."""
        trainer = self.trainer
        trainer.state = IPUTrainerState(max_steps=self.max_steps, num_train_epochs=self.epochs,
                                        train_batch_size=self.args.train_batch_size)
        for name in ("logging_steps", "eval_steps", "save_steps"):
            value = getattr(self.args, name) or 0
            setattr(trainer.state, name, math.ceil(value * self.max_steps) if value < 1 else value)
        trainer.create_optimizer_and_scheduler(self.max_steps)
        if self.checkpoint is None:
            return 0, 0
        trainer.state = ckpt.load_state(self.checkpoint)
        ckpt.load_training_state(trainer, self.checkpoint)
        step = trainer.state.global_step
        return (step // self.steps_per_epoch, step % self.steps_per_epoch) if self.steps_per_epoch else (0, step)

    def run(self) -> TrainOutput:
        trainer, args = self.trainer, self.args
        start = time.time()
        epochs_done, skip = self._start_state()
        self.last_logged_step = trainer.state.global_step
        executor = trainer._training_executor()
        logger.info("***** Running training *****")
        logger.info("  Num Epochs = %s, total optimization steps = %s, combined batch size = %s",
                    self.epochs, self.max_steps,
                    args.per_device_train_batch_size * trainer.ipu_config.batch_size_factor())
        if args.compile_only:
            executor.compile(**next(iter(self.loader)))
            return TrainOutput(0, math.nan, {"compile_only": 1.0})
        trainer.control = trainer.callback_handler.on_train_begin(args, trainer.state, trainer.control)
        for epoch in range(epochs_done, self.epochs):
            if self._epoch(executor, epoch, skip if epoch == epochs_done else 0):
                break
        trainer.control = trainer.callback_handler.on_train_end(args, trainer.state, trainer.control)
        self._load_best_model()
        return self._finish(start)

    def _epoch(self, executor, epoch: int, skip: int) -> bool:
        """One pass over the data; True when training must stop."""
        trainer, args = self.trainer, self.args
        generator = getattr(self.loader, "generator", None)
        if generator is not None:  # each epoch's order depends only on the seed: resuming repeats it
            generator.manual_seed(args.seed + epoch)
        trainer.control = trainer.callback_handler.on_epoch_begin(args, trainer.state, trainer.control)
        for step, batch in enumerate(self.loader):
            if step < skip:
                continue
            trainer.control = trainer.callback_handler.on_step_begin(args, trainer.state, trainer.control)
            self._add_loss(float(_loss_of(executor(**batch)).float().mean()))
            self._step_scheduler(executor)
            trainer.state.global_step += 1
            trainer.state.epoch = epoch + (step + 1) / (self.steps_per_epoch or step + 1)
            trainer.control = trainer.callback_handler.on_step_end(args, trainer.state, trainer.control)
            self._maybe_log_save_evaluate()
            if (trainer.control.should_epoch_stop or trainer.control.should_training_stop
                    or trainer.state.global_step >= self.max_steps):
                break
        trainer.control = trainer.callback_handler.on_epoch_end(args, trainer.state, trainer.control)
        self._maybe_log_save_evaluate()
        return trainer.control.should_training_stop or trainer.state.global_step >= self.max_steps

    def _add_loss(self, loss: float) -> None:
        """With logging_nan_inf_filter, a nan/inf loss counts as the mean of the others logged so far."""
        if self.args.logging_nan_inf_filter and not math.isfinite(loss):
            loss = self.logged_loss / (1 + self.trainer.state.global_step - self.last_logged_step)
        self.logged_loss += loss

    def _step_scheduler(self, executor) -> None:
        """The learning rate changes on the host; setOptimizer sends it to the IPU."""
        before = [g["lr"] for g in self.trainer.optimizer.param_groups]
        with warnings.catch_warnings():  # the executor, not the host, calls optimizer.step()
            warnings.filterwarnings("ignore", message="Detected call of `lr_scheduler.step",
                                    category=UserWarning)
            self.trainer.lr_scheduler.step()
        if [g["lr"] for g in self.trainer.optimizer.param_groups] != before:
            executor.setOptimizer(self.trainer.optimizer)

    def _maybe_log_save_evaluate(self) -> None:
        trainer = self.trainer
        if trainer.control.should_log and trainer.state.global_step > self.last_logged_step:
            steps = trainer.state.global_step - self.last_logged_step
            trainer.log({"loss": round(self.logged_loss / steps, 4),
                         "learning_rate": trainer.lr_scheduler.get_last_lr()[0]})
            self.total_loss += self.logged_loss
            self.logged_loss, self.last_logged_step = 0.0, trainer.state.global_step
            trainer.control.should_log = False
        metrics = None
        if trainer.control.should_evaluate:
            metrics = trainer.evaluate(ignore_keys=self.ignore_keys_for_eval)
            trainer.control.should_evaluate = False
        if trainer.control.should_save:
            trainer._save_checkpoint(metrics)
            trainer.control = trainer.callback_handler.on_save(self.args, trainer.state, trainer.control)
            trainer.control.should_save = False

    def _load_best_model(self) -> None:
        best = self.trainer.state.best_model_checkpoint
        if self.args.load_best_model_at_end and best is not None:
            logger.info("Loading best model from %s (score: %s).", best, self.trainer.state.best_metric)
            ckpt.load_weights(self.trainer.model, best)

    def _finish(self, start: float) -> TrainOutput:
        trainer = self.trainer
        self.total_loss += self.logged_loss
        steps = max(trainer.state.global_step, 1)
        metrics = speed_metrics("train", start, num_steps=trainer.state.global_step)
        metrics["train_loss"] = self.total_loss / steps
        trainer.log(dict(metrics))
        return TrainOutput(trainer.state.global_step, metrics["train_loss"], metrics)
