"""IPUTrainingArguments: transformers.TrainingArguments with optimum-graphcore's IPU fields."""
from __future__ import annotations

import dataclasses
from functools import cached_property

import torch
from transformers import TrainingArguments
from transformers.training_args import ParallelMode

from ... import poptorch

DATALOADER_MODES = {"sync": poptorch.DataLoaderMode.Sync,
                    "async": poptorch.DataLoaderMode.Async,
                    "async_rebatched": poptorch.DataLoaderMode.AsyncRebatched}


@dataclasses.dataclass
class IPUTrainingArguments(TrainingArguments):
    """Every transformers.TrainingArguments field and property, plus optimum-graphcore v0.7's.

    Batch sizes are micro-batch sizes (default 1): each call to the IPU takes
    `per_device_train_batch_size x ipu_config.batch_size_factor()` samples. As in
    optimum-graphcore, `gradient_accumulation_steps` and `auto_loss_scaling` are passed on to
    the IPUConfig (through `ipu_config_overrides`), and the host never accumulates.

    IPU fields: ipu_config_name, n_ipu (replication_factor = n_ipu // ipus_per_replica), fp32
    (else the model is cast with .half()), loss_scaling, auto_loss_scaling, dataloader_mode
    ("sync", "async", "async_rebatched"), compile_only, ipu_config_overrides ("k=v,k2=v2"),
    pad_on_batch_axis, lamb, lamb_no_bias_correction. transformers 4.x names kept beside
    transformers 5's: evaluation_strategy (eval_strategy), warmup_ratio.
    """

    per_device_train_batch_size: int = dataclasses.field(default=1, metadata={"help": "Micro-batch size for training."})
    per_device_eval_batch_size: int = dataclasses.field(default=1, metadata={"help": "Micro-batch size for evaluation."})
    gradient_accumulation_steps: int | None = dataclasses.field(
        default=None, metadata={"help": "Passed on to ipu_config.gradient_accumulation_steps."})
    evaluation_strategy: str | None = dataclasses.field(
        default=None, metadata={"help": "transformers 4.x's name for eval_strategy."})
    warmup_ratio: float = dataclasses.field(default=0.0, metadata={"help": "Fraction of steps spent warming up."})
    ipu_config_name: str | None = None
    n_ipu: int | None = None
    fp32: bool = False
    loss_scaling: float | None = None
    auto_loss_scaling: bool = False
    dataloader_mode: str = "sync"
    compile_only: bool = False
    ipu_config_overrides: str | None = None
    pad_on_batch_axis: bool = False
    lamb: bool = False
    lamb_no_bias_correction: bool = False

    def __post_init__(self):
        if self.dataloader_mode not in DATALOADER_MODES:
            raise ValueError(f"dataloader_mode must be one of {', '.join(DATALOADER_MODES)}; got "
                             f"{self.dataloader_mode!r}")
        if self.n_ipu is not None and (not isinstance(self.n_ipu, int) or self.n_ipu < 1):
            raise ValueError(f"n_ipu must be a positive integer (or None); got {self.n_ipu!r}")
        if self.evaluation_strategy is not None:
            self.eval_strategy = self.evaluation_strategy
        self._move_overrides_to_ipu_config()
        super().__post_init__()

    def _move_overrides_to_ipu_config(self) -> None:
        """Accumulation, loss scaling and recomputation belong to the IPUConfig on an IPU."""
        overrides = []
        if self.gradient_accumulation_steps is not None:
            overrides.append(f"gradient_accumulation_steps={self.gradient_accumulation_steps}")
        self.gradient_accumulation_steps = 1
        if self.auto_loss_scaling:
            overrides.append("auto_loss_scaling=True")
        if self.gradient_checkpointing:
            overrides.append("recompute_checkpoint_every_layer=True")
        if overrides:
            self.ipu_config_overrides = ",".join(filter(None, [self.ipu_config_overrides, *overrides]))

    # --- one host process driving simulated IPUs: no CUDA, no torch.distributed ---------------
    @cached_property
    def _setup_devices(self) -> torch.device:
        return torch.device("cpu")

    @property
    def device(self) -> torch.device:
        return self._setup_devices

    @property
    def n_gpu(self) -> int:
        return 0

    @property
    def parallel_mode(self):
        return ParallelMode.NOT_PARALLEL

    @property
    def world_size(self) -> int:
        return 1

    @property
    def process_index(self) -> int:
        return 0

    @property
    def local_process_index(self) -> int:
        return 0

    @property
    def place_model_on_device(self) -> bool:
        return False

    @property
    def train_batch_size(self) -> int:
        """The micro-batch size: replication, accumulation and device iterations come from IPUConfig."""
        return self.per_device_train_batch_size

    @property
    def eval_batch_size(self) -> int:
        return self.per_device_eval_batch_size

    def get_process_log_level(self) -> int:
        """log_level as a logging level; "passive" means INFO, as in optimum-graphcore."""
        levels = {"debug": 10, "info": 20, "warning": 30, "error": 40, "critical": 50}
        return levels.get(self.log_level, 20)
