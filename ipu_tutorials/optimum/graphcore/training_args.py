"""IPUTrainingArguments: the training settings of optimum-graphcore's examples, plus the IPU ones."""
from __future__ import annotations

import dataclasses

from ... import poptorch

DATALOADER_MODES = {"sync": poptorch.DataLoaderMode.Sync,
                    "async": poptorch.DataLoaderMode.Async,
                    "async_rebatched": poptorch.DataLoaderMode.AsyncRebatched}


@dataclasses.dataclass
class IPUTrainingArguments:
    """The subset of transformers.TrainingArguments an optimum text-classification run touches.

    Batch sizes are micro-batch sizes: each call to the IPU takes
    `per_device_train_batch_size x ipu_config.batch_size_factor()` samples.

    Args:
        output_dir: where save_model writes the model and ipu_config.json.
        per_device_train_batch_size, per_device_eval_batch_size: micro-batch sizes.
        learning_rate, weight_decay, adam_beta1, adam_beta2, adam_epsilon: AdamW's settings.
        lr_scheduler_type: "linear" (decay to 0 over the run, after warmup) or "constant".
        warmup_ratio: fraction of the optimizer steps spent warming the learning rate up.
        num_train_epochs, max_steps: run length; max_steps > 0 wins (counted in optimizer steps).
        logging_steps: log the loss every this many optimizer steps.
        seed: seeds torch and becomes ipu_config.seed.
        n_ipu: IPUs available; replication_factor becomes n_ipu // ipus_per_replica.
        ipu_config_overrides: "k=v,k2=v2", applied with IPUConfig.update_from_string.
        fp32: keep float32 weights (otherwise the model is cast with model.half()).
        loss_scaling: static loss scaling for float16 training (None: no scaling).
        auto_loss_scaling: sets ipu_config.auto_loss_scaling.
        dataloader_mode: "sync", "async" or "async_rebatched" (poptorch.DataLoaderMode).
        dataloader_drop_last: drop the last incomplete combined batch (the IPU needs full ones).
        compile_only: compile offline (useOfflineIpuTarget), run nothing.
        do_train, do_eval: recorded, as in transformers (the example scripts read them).
    """

    output_dir: str = "trainer_output"
    per_device_train_batch_size: int = 1
    per_device_eval_batch_size: int = 1
    learning_rate: float = 5e-5
    weight_decay: float = 0.0
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_epsilon: float = 1e-8
    lr_scheduler_type: str = "linear"
    warmup_ratio: float = 0.0
    num_train_epochs: float = 3.0
    max_steps: int = -1
    logging_steps: int = 10
    seed: int = 42
    n_ipu: int | None = None
    ipu_config_overrides: str | None = None
    fp32: bool = False
    loss_scaling: float | None = None
    auto_loss_scaling: bool = False
    dataloader_mode: str = "sync"
    dataloader_drop_last: bool = True
    compile_only: bool = False
    do_train: bool = False
    do_eval: bool = False

    def __post_init__(self):
        if self.dataloader_mode not in DATALOADER_MODES:
            raise ValueError(f"dataloader_mode must be one of {', '.join(DATALOADER_MODES)}; got "
                             f"{self.dataloader_mode!r}")
        if self.lr_scheduler_type not in ("linear", "constant"):
            raise ValueError(f"lr_scheduler_type must be 'linear' or 'constant' here; got "
                             f"{self.lr_scheduler_type!r}")
        for name in ("per_device_train_batch_size", "per_device_eval_batch_size"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive integer; got {getattr(self, name)!r}")
        if self.n_ipu is not None and (not isinstance(self.n_ipu, int) or self.n_ipu < 1):
            raise ValueError(f"n_ipu must be a positive integer (or None); got {self.n_ipu!r}")
        if not 0.0 <= self.warmup_ratio < 1.0:
            raise ValueError(f"warmup_ratio must be in [0, 1); got {self.warmup_ratio}")
