"""IPUTrainer: transformers' Trainer workflow with every step run by poptorch executors."""
from __future__ import annotations

import copy
import inspect
import logging
import math
import os
import time
from typing import Any, Callable

import torch
from transformers import default_data_collator, get_scheduler
from transformers.pytorch_utils import ALL_LAYERNORM_LAYERS
from transformers.trainer_callback import (CallbackHandler, DefaultFlowCallback, TrainerControl)
from transformers.trainer_pt_utils import get_parameter_names
from transformers.trainer_utils import (PredictionOutput, TrainerMemoryTracker, TrainOutput,
                                        has_length, set_seed, speed_metrics)
from transformers.utils import find_labels

from ... import poptorch
from . import trainer_checkpoints as ckpt
from .ipu_configuration import IPUConfig
from .modeling_utils import to_pipelined
from .trainer_checkpoints import IPUTrainerState
from .trainer_evaluation import evaluation_loop
from .trainer_loop import TrainingLoop
from .training_args import DATALOADER_MODES, IPUTrainingArguments

# optimum-graphcore's logger name, so that logging.getLogger("optimum") settings reach it.
logger = logging.getLogger("optimum.graphcore.trainer")


class IPUTrainer:
    """Train, evaluate and predict with a model pipelined by an IPUConfig, as optimum-graphcore does.

    The model is copied into its pipelined class (`to_pipelined`), placed by `parallelize()`
    and run by a `poptorch.trainingModel` / `poptorch.inferenceModel` on simulated IPUs. One
    training step is one call: `per_device_train_batch_size x ipu_config.batch_size_factor()`
    samples, accumulated and replicated on the IPUs. Callbacks, logging, checkpoints
    (`checkpoint-N` directories), resuming and `load_best_model_at_end` follow transformers.

    Raises:
        IncompatibleIPUConfigError: when the configuration does not fit the model.
        ValueError: when n_ipu is not a multiple of the IPUs per replica, or no model is given.
    """

    def __init__(self, model: torch.nn.Module | None = None, ipu_config: IPUConfig | None = None,
                 args: IPUTrainingArguments | None = None, data_collator: Callable | None = None,
                 eval_data_collator: Callable | None = None, train_dataset=None, eval_dataset=None,
                 tokenizer=None, model_init: Callable | None = None,
                 compute_metrics: Callable | None = None, callbacks: list | None = None,
                 optimizers: tuple = (None, None), preprocess_logits_for_metrics: Callable | None = None,
                 force_to_pipelined: bool = False):
        self.args = args if args is not None else IPUTrainingArguments("tmp_trainer")
        logging.getLogger("optimum").setLevel(self.args.get_process_log_level())
        self._memory_tracker = TrainerMemoryTracker(self.args.skip_memory_metrics)
        self._memory_tracker.start()
        if ipu_config is None:
            raise ValueError("IPUTrainer needs an ipu_config (an IPUConfig)")
        self.ipu_config = self._configure(copy.deepcopy(ipu_config))
        self.model_init, self.force_to_pipelined = model_init, force_to_pipelined
        if model is None and model_init is None:
            raise ValueError("IPUTrainer requires either a model or a model_init argument")
        set_seed(self.args.seed)
        self.opts = self.ipu_config.to_options(compile_only=self.args.compile_only)
        self.eval_opts = self.ipu_config.to_options(for_inference=True,
                                                    compile_only=self.args.compile_only)
        self.optimizer, self.lr_scheduler = optimizers
        self.model = self._pipeline(model if model is not None else model_init())
        self.data_collator = data_collator or default_data_collator
        self.eval_data_collator = eval_data_collator or self.data_collator
        self.train_dataset, self.eval_dataset = train_dataset, eval_dataset
        self.tokenizer, self.compute_metrics = tokenizer, compute_metrics
        self.preprocess_logits_for_metrics = preprocess_logits_for_metrics
        self.label_names = self.args.label_names or find_labels(type(self.model))
        self.state, self.control = IPUTrainerState(), TrainerControl()
        self.callback_handler = CallbackHandler([DefaultFlowCallback, *(callbacks or [])],
                                                self.model, tokenizer, self.optimizer, self.lr_scheduler)
        self.training_model: poptorch.PoplarExecutor | None = None
        self.inference_model: poptorch.PoplarExecutor | None = None
        self._memory_tracker.stop_and_update_metrics()

    def _configure(self, config: IPUConfig) -> IPUConfig:
        """n_ipu, ipu_config_overrides, seed and loss scaling from the arguments."""
        args = self.args
        if args.n_ipu is not None:
            for prefix in ("", "inference_"):
                ipus = getattr(config, f"{prefix}ipus_per_replica")
                if args.n_ipu % ipus:
                    raise ValueError(f"n_ipu={args.n_ipu} is not a multiple of "
                                     f"{prefix}ipus_per_replica={ipus}: each replica needs "
                                     f"{ipus} IPUs. Use n_ipu = {ipus} x replicas.")
                setattr(config, f"{prefix}replication_factor", args.n_ipu // ipus)
        if args.ipu_config_overrides:
            config.update_from_string(args.ipu_config_overrides)
        config.seed = args.seed
        config.auto_loss_scaling = config.auto_loss_scaling or args.auto_loss_scaling
        return config

    def _pipeline(self, model: torch.nn.Module) -> torch.nn.Module:
        """The pipelined copy, placed; a user optimizer is moved onto the copy's parameters."""
        pipelined = to_pipelined(model, self.ipu_config, force=self.force_to_pipelined)
        pipelined.parallelize(**self.ipu_config._parallelize_kwargs)
        if not self.args.fp32:
            pipelined.half()
        if self.optimizer is not None:
            _rebind_optimizer(self.optimizer, model, pipelined)
        return pipelined

    # --- callbacks --------------------------------------------------------------------------
    def add_callback(self, callback) -> None:
        self.callback_handler.add_callback(callback)

    def pop_callback(self, callback):
        return self.callback_handler.pop_callback(callback)

    def remove_callback(self, callback) -> None:
        self.callback_handler.remove_callback(callback)

    # --- data -------------------------------------------------------------------------------
    def _remove_unused_columns(self, dataset):
        """A datasets.Dataset keeps only the columns model.forward takes (and the labels)."""
        if not self.args.remove_unused_columns or not hasattr(dataset, "column_names"):
            return dataset
        wanted = set(inspect.signature(self.model.forward).parameters)
        wanted |= set(self.label_names) | {"label", "label_ids"}
        unused = [c for c in dataset.column_names if c not in wanted]
        return dataset.remove_columns(unused) if unused else dataset

    def _loader(self, options, dataset, batch_size: int, collate_fn, training: bool):
        dataset = self._remove_unused_columns(dataset)
        shuffle = training and has_length(dataset) and not isinstance(dataset, torch.utils.data.IterableDataset)
        generator = torch.Generator().manual_seed(self.args.seed) if shuffle else None
        return poptorch.DataLoader(options, dataset, batch_size=batch_size, shuffle=shuffle,
                                   drop_last=training or self.args.dataloader_drop_last,
                                   collate_fn=collate_fn, generator=generator,
                                   mode=DATALOADER_MODES[self.args.dataloader_mode])

    def get_train_dataloader(self) -> poptorch.DataLoader:
        """Combined batches of per_device_train_batch_size x ipu_config.batch_size_factor(); the
        last incomplete one is dropped (the IPU needs full batches)."""
        if self.train_dataset is None:
            raise ValueError("Trainer: training requires a train_dataset.")
        return self._loader(self.opts, self.train_dataset, self.args.per_device_train_batch_size,
                            self.data_collator, training=True)

    def get_eval_dataloader(self, eval_dataset=None) -> poptorch.DataLoader:
        dataset = eval_dataset if eval_dataset is not None else self.eval_dataset
        if dataset is None:
            raise ValueError("Trainer: evaluation requires an eval_dataset.")
        return self._loader(self.eval_opts, dataset, self.args.per_device_eval_batch_size,
                            self.eval_data_collator, training=False)

    def get_test_dataloader(self, test_dataset) -> poptorch.DataLoader:
        return self._loader(self.eval_opts, test_dataset, self.args.per_device_eval_batch_size,
                            self.eval_data_collator, training=False)

    # --- optimizer and executors ------------------------------------------------------------
    def create_optimizer(self) -> torch.optim.Optimizer:
        """poptorch AdamW (or LAMB with args.lamb): no weight decay on biases and norm weights."""
        if self.optimizer is not None:
            return self.optimizer
        args, named = self.args, list(self.model.named_parameters())
        decay = set(get_parameter_names(self.model, ALL_LAYERNORM_LAYERS)) - {n for n, _ in named if "bias" in n}
        groups = [{"params": [p for n, p in named if n in decay and p.requires_grad],
                   "weight_decay": args.weight_decay}]
        if args.lamb:  # LAMB's trust ratio is not applied to biases (max_weight_norm 0)
            groups.append({"params": [p for n, p in named if "bias" in n and p.requires_grad],
                           "weight_decay": 0.0, "max_weight_norm": 0.0})
        groups.append({"params": [p for n, p in named if n not in decay and p.requires_grad
                                  and not (args.lamb and "bias" in n)], "weight_decay": 0.0})
        common = dict(lr=args.learning_rate, betas=(args.adam_beta1, args.adam_beta2),
                      eps=args.adam_epsilon, loss_scaling=args.loss_scaling or 1.0)
        if args.lamb:
            self.optimizer = poptorch.optim.LAMB(groups, bias_correction=not args.lamb_no_bias_correction,
                                                 **common)
        else:
            self.optimizer = poptorch.optim.AdamW(groups, **common)
        return self.optimizer

    def create_scheduler(self, num_training_steps: int, optimizer=None):
        if self.lr_scheduler is None:
            warmup = self.args.warmup_steps or math.ceil(self.args.warmup_ratio * num_training_steps)
            self.lr_scheduler = get_scheduler(self.args.lr_scheduler_type, optimizer or self.optimizer,
                                              num_warmup_steps=int(warmup),
                                              num_training_steps=num_training_steps)
        return self.lr_scheduler

    def create_optimizer_and_scheduler(self, num_training_steps: int) -> None:
        self.create_optimizer()
        self.create_scheduler(num_training_steps, self.optimizer)
        self.callback_handler.optimizer = self.optimizer
        self.callback_handler.lr_scheduler = self.lr_scheduler

    def _reparallelize(self, mode: str) -> None:
        """Place the model again for `mode` ("train" or "eval"): layers_per_ipu may differ."""
        self.model.deparallelize()
        getattr(self.ipu_config, mode)()
        self.model.ipu_config = self.ipu_config
        self.model.parallelize(**self.ipu_config._parallelize_kwargs)

    def _training_executor(self) -> poptorch.PoplarExecutor:
        if self.training_model is None:
            self._reparallelize("train")
            self.training_model = poptorch.trainingModel(self.model.train(), self.opts, self.optimizer)
        return self.training_model

    def _inference_executor(self) -> poptorch.PoplarExecutor:
        if self.inference_model is None:
            self._reparallelize("eval")
            self.inference_model = poptorch.inferenceModel(self.model.eval(), self.eval_opts)
        return self.inference_model

    def _reset_executors(self) -> None:
        for executor in (self.training_model, self.inference_model):
            if executor is not None:
                executor.destroy()
        self.training_model = self.inference_model = None

    # --- training ---------------------------------------------------------------------------
    def train(self, resume_from_checkpoint: str | bool | None = None, trial=None,
              ignore_keys_for_eval: list[str] | None = None, **kwargs) -> TrainOutput:
        """Train for args.max_steps calls, or args.num_train_epochs epochs.

        Args:
            resume_from_checkpoint: a checkpoint directory, or True for output_dir's last one.

        Raises:
            ValueError: no checkpoint where one was asked for, or no train_dataset.
        """
        self._memory_tracker.start()
        checkpoint = ckpt.resolve_checkpoint(resume_from_checkpoint, self.args.output_dir)
        if self.model_init is not None:
            set_seed(self.args.seed)
            self._reset_executors()
            self.optimizer = self.lr_scheduler = None
            self.model = self._pipeline(self.model_init())
        if checkpoint is not None:
            ckpt.load_weights(self.model, checkpoint)
        output = TrainingLoop(self, checkpoint, ignore_keys_for_eval).run()
        self._memory_tracker.stop_and_update_metrics(output.metrics)
        return output

    def log(self, logs: dict[str, float], *args) -> None:
        if self.state.epoch is not None:
            logs["epoch"] = self.state.epoch
        self.state.log_history.append({**logs, "step": self.state.global_step})
        self.control = self.callback_handler.on_log(self.args, self.state, self.control, logs)

    # --- evaluation and prediction ----------------------------------------------------------
    def evaluate(self, eval_dataset=None, ignore_keys: list[str] | None = None,
                 metric_key_prefix: str = "eval") -> dict[str, float]:
        """Loss (when the model returns one) and compute_metrics over the evaluation set."""
        self._memory_tracker.start()
        start = time.time()
        output = self._run_evaluation(self.get_eval_dataloader(eval_dataset), ignore_keys,
                                      metric_key_prefix)
        output.metrics.update(speed_metrics(metric_key_prefix, start, output.num_samples))
        self.log(output.metrics)
        self.control = self.callback_handler.on_evaluate(self.args, self.state, self.control,
                                                         output.metrics)
        self._memory_tracker.stop_and_update_metrics(output.metrics)
        return output.metrics

    def predict(self, test_dataset, ignore_keys: list[str] | None = None,
                metric_key_prefix: str = "test") -> PredictionOutput:
        """Predictions (numpy), labels and metrics over `test_dataset`."""
        self._memory_tracker.start()
        start = time.time()
        output = self._run_evaluation(self.get_test_dataloader(test_dataset), ignore_keys,
                                      metric_key_prefix)
        output.metrics.update(speed_metrics(metric_key_prefix, start, output.num_samples))
        self.control = self.callback_handler.on_predict(self.args, self.state, self.control,
                                                        output.metrics)
        self._memory_tracker.stop_and_update_metrics(output.metrics)
        return PredictionOutput(predictions=output.predictions, label_ids=output.label_ids,
                                metrics=output.metrics)

    def _run_evaluation(self, dataloader, ignore_keys, metric_key_prefix: str):
        config = getattr(self.model, "config", None)
        if ignore_keys is None and config is not None:  # transformers 5 names the past "cache"
            ignore_keys = list(getattr(config, "keys_to_ignore_at_inference", None)
                               or ["past_key_values", "cache"])
        return evaluation_loop(self, dataloader, self.args.prediction_loss_only, ignore_keys or [],
                               metric_key_prefix)

    # --- saving -----------------------------------------------------------------------------
    def save_model(self, output_dir: str | None = None) -> None:
        """The model's weights (pytorch_model.bin), config.json and ipu_config.json."""
        output_dir = output_dir or self.args.output_dir
        ckpt.save_weights(self.model, output_dir)
        self.ipu_config.save_pretrained(output_dir)
        if self.tokenizer is not None:
            self.tokenizer.save_pretrained(output_dir)

    def _save_checkpoint(self, metrics: dict | None = None) -> None:
        directory = ckpt.checkpoint_dir(self.args.output_dir, self.state.global_step)
        self.save_model(directory)
        self._track_best(metrics, directory)
        ckpt.save_training_state(self, directory)
        self._rotate_checkpoints(output_dir=self.args.output_dir)

    def _track_best(self, metrics: dict | None, directory: str) -> None:
        name = self.args.metric_for_best_model
        if not metrics or name is None:
            return
        value = metrics.get(name if name.startswith("eval_") else f"eval_{name}")
        better = (lambda a, b: a > b) if self.args.greater_is_better else (lambda a, b: a < b)
        if value is not None and (self.state.best_metric is None or better(value, self.state.best_metric)):
            self.state.best_metric, self.state.best_model_checkpoint = value, directory
            self.state.best_global_step = self.state.global_step

    def _rotate_checkpoints(self, use_mtime: bool = False, output_dir: str | None = None) -> None:
        if self.args.save_total_limit is None or self.args.save_total_limit <= 0:
            return
        ckpt.rotate(output_dir or self.args.output_dir, self.args.save_total_limit,
                    self.state.best_model_checkpoint)


def _rebind_optimizer(optimizer: torch.optim.Optimizer, original: torch.nn.Module,
                      pipelined: torch.nn.Module) -> None:
    """The user built the optimizer on `original`; point it at the pipelined copy's parameters."""
    copies = {id(p): q for p, q in zip(original.parameters(), pipelined.parameters())}
    for group in optimizer.param_groups:
        group["params"] = [copies.get(id(p), p) for p in group["params"]]


__all__ = ["IPUTrainer", "IPUTrainerState"]
