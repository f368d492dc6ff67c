"""Lightning 2.0's automatic choices around IPUs, for users who opt in to the simulated ones.

Lightning 2.0.9 chose the IPU for `Trainer(accelerator="auto")` whenever PopTorch found IPU
hardware, and warned "IPU available but not used" when a Trainer ran elsewhere. No real IPU
exists here, so the simulated ones count as present only when the user says so:
`IPU_TUTORIALS_AUTO_IPU=1` in the environment. Without it, "auto" keeps Lightning's own choice.
"""
from __future__ import annotations

import functools
import os

from lightning.pytorch.callbacks import GradientAccumulationScheduler
from lightning.pytorch.trainer import setup as trainer_setup
from lightning.pytorch.trainer.connectors.accelerator_connector import _AcceleratorConnector
from lightning.pytorch.utilities.rank_zero import rank_zero_warn

ENV_AUTO = "IPU_TUTORIALS_AUTO_IPU"


def ipus_offered() -> bool:
    """True when the user opted in: `Trainer(accelerator="auto")` then means the IPUs."""
    return os.environ.get(ENV_AUTO, "0").strip().lower() in ("1", "true", "yes")


def install(strategy_cls, accelerator_cls) -> None:
    """Patch the three places where Lightning 2.0.9 reasoned about IPUs (once)."""
    if getattr(_AcceleratorConnector, "_ipu_tutorials_auto", False):
        return
    _AcceleratorConnector._ipu_tutorials_auto = True
    _patch_auto_accelerator(strategy_cls)
    _patch_device_info(accelerator_cls)
    _patch_accumulation_scheduler(accelerator_cls)


def _patch_auto_accelerator(strategy_cls) -> None:
    lightning_choice = _AcceleratorConnector._choose_auto_accelerator

    def _choose_auto_accelerator(self) -> str:
        # as 2.0.9: an IPUStrategy implies the IPU; offered IPUs come first
        if isinstance(self._strategy_flag, strategy_cls) or ipus_offered():
            return "ipu"
        return lightning_choice()

    _AcceleratorConnector._choose_auto_accelerator = _choose_auto_accelerator


def _patch_device_info(accelerator_cls) -> None:
    log_device_info = trainer_setup._log_device_info

    @functools.wraps(log_device_info)
    def _log_device_info(trainer) -> None:
        log_device_info(trainer)
        if ipus_offered() and not isinstance(trainer.accelerator, accelerator_cls):
            rank_zero_warn(
                "IPU available but not used. Set `accelerator` and `devices` using "
                f"`Trainer(accelerator='ipu', devices={accelerator_cls.auto_device_count()})`. "
                f"(The IPUs are simulated; unset {ENV_AUTO} to silence this.)")

    trainer_setup._log_device_info = _log_device_info


def _patch_accumulation_scheduler(accelerator_cls) -> None:
    on_train_start = GradientAccumulationScheduler.on_train_start

    @functools.wraps(on_train_start)
    def checked_on_train_start(self, trainer, pl_module) -> None:
        if isinstance(trainer.accelerator, accelerator_cls):
            raise RuntimeError(
                f"The `{type(trainer.accelerator).__name__}` does not support "
                f"`accumulate_grad_batches` changing between epochs: gradient accumulation is "
                f"compiled into the IPU program. Remove the GradientAccumulationScheduler and set "
                f"Trainer(accumulate_grad_batches=N).")
        on_train_start(self, trainer, pl_module)

    GradientAccumulationScheduler.on_train_start = checked_on_train_start
