"""IPUTrainer: fine-tune and evaluate a pipelined Hugging Face model through poptorch executors."""
from __future__ import annotations

import copy
import dataclasses
import math
import os
from typing import Any, Callable

import torch
from torch.utils.data import default_collate

from ... import poptorch
from .ipu_configuration import IPUConfig
from .modeling_utils import to_pipelined
from .training_args import DATALOADER_MODES, IPUTrainingArguments


@dataclasses.dataclass
class EvalPrediction:
    """What compute_metrics receives: stacked predictions (logits) and labels."""

    predictions: torch.Tensor
    label_ids: torch.Tensor | None


@dataclasses.dataclass
class TrainOutput:
    global_step: int  # calls to the training executor (each one D optimizer steps)
    training_loss: float  # mean of the losses returned by those calls
    metrics: dict[str, float]


def _loss_of(outputs) -> torch.Tensor:
    """optimum's rule: outputs["loss"] for a model output, else the first output."""
    if isinstance(outputs, dict):
        return outputs["loss"]
    return outputs[0] if isinstance(outputs, (tuple, list)) else outputs


class IPUTrainer:
    """Trains and evaluates a transformers model pipelined by an IPUConfig.

    Args:
        model: a transformers model (BERT, GPT-2 or ViT family) or a PipelineMixin model.
        ipu_config: the IPUConfig; the trainer works on a copy.
        args: IPUTrainingArguments (defaults if None).
        data_collator: turns a list of dataset items into a batch dict (default_collate if None).
        eval_data_collator: the same for evaluation (data_collator if None).
        train_dataset, eval_dataset: map-style datasets of dicts of tensors.
        compute_metrics: EvalPrediction -> dict of metrics.
        optimizers: (optimizer, None); by default a poptorch.optim.AdamW built from args.
        force_to_pipelined: pipeline an unregistered model class anyway.

    Raises:
        IncompatibleIPUConfigError: when the configuration does not fit the model.
        ValueError: when n_ipu is not a multiple of the IPUs per replica.
    """

    def __init__(self, model: torch.nn.Module, ipu_config: IPUConfig,
                 args: IPUTrainingArguments | None = None, data_collator: Callable | None = None,
                 eval_data_collator: Callable | None = None, train_dataset=None, eval_dataset=None,
                 tokenizer=None, compute_metrics: Callable | None = None,
                 optimizers: tuple = (None, None), force_to_pipelined: bool = False):
        self.args = args if args is not None else IPUTrainingArguments()
        self.ipu_config = self._configure(copy.deepcopy(ipu_config))
        torch.manual_seed(self.args.seed)
        self.opts = self.ipu_config.to_options(compile_only=self.args.compile_only)
        self.eval_opts = self.ipu_config.to_options(for_inference=True,
                                                    compile_only=self.args.compile_only)
        self.model = to_pipelined(model, self.ipu_config, force=force_to_pipelined)
        self.model.parallelize(**self.ipu_config.parallelize_kwargs)
        if not self.args.fp32:
            self.model.half()
        self.data_collator = data_collator or default_collate
        self.eval_data_collator = eval_data_collator or self.data_collator
        self.train_dataset, self.eval_dataset = train_dataset, eval_dataset
        self.tokenizer, self.compute_metrics = tokenizer, compute_metrics
        self.optimizer = optimizers[0]
        self.training_model: poptorch.PoplarExecutor | None = None
        self.inference_model: poptorch.PoplarExecutor | None = None
        self.log_history: list[dict[str, float]] = []

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

    # --- data -----------------------------------------------------------------------------------
    def get_train_dataloader(self) -> poptorch.DataLoader:
        """Combined batches of per_device_train_batch_size x ipu_config.batch_size_factor()."""
        if self.train_dataset is None:
            raise ValueError("IPUTrainer needs a train_dataset to train")
        generator = torch.Generator().manual_seed(self.args.seed)
        return poptorch.DataLoader(self.opts, self.train_dataset,
                                   batch_size=self.args.per_device_train_batch_size, shuffle=True,
                                   drop_last=self.args.dataloader_drop_last,
                                   collate_fn=self.data_collator, generator=generator,
                                   mode=DATALOADER_MODES[self.args.dataloader_mode])

    def get_eval_dataloader(self, eval_dataset=None) -> poptorch.DataLoader:
        dataset = eval_dataset if eval_dataset is not None else self.eval_dataset
        if dataset is None:
            raise ValueError("IPUTrainer needs an eval_dataset to evaluate")
        return poptorch.DataLoader(self.eval_opts, dataset,
                                   batch_size=self.args.per_device_eval_batch_size, shuffle=False,
                                   drop_last=self.args.dataloader_drop_last,
                                   collate_fn=self.eval_data_collator,
                                   mode=DATALOADER_MODES[self.args.dataloader_mode])

    # --- executors ------------------------------------------------------------------------------
    def create_optimizer(self) -> torch.optim.Optimizer:
        """AdamW, with no weight decay on biases and LayerNorm weights (as transformers does)."""
        if self.optimizer is None:
            args = self.args
            decay = [p for n, p in self.model.named_parameters()
                     if p.requires_grad and not ("bias" in n or "LayerNorm" in n or "ln_" in n)]
            no_decay = [p for n, p in self.model.named_parameters()
                        if p.requires_grad and ("bias" in n or "LayerNorm" in n or "ln_" in n)]
            groups = [{"params": decay, "weight_decay": args.weight_decay},
                      {"params": no_decay, "weight_decay": 0.0}]
            self.optimizer = poptorch.optim.AdamW(
                groups, lr=args.learning_rate, betas=(args.adam_beta1, args.adam_beta2),
                eps=args.adam_epsilon, loss_scaling=args.loss_scaling or 1.0)
        return self.optimizer

    def _reparallelize(self, mode: str) -> None:
        """Place the model again for `mode` ("train" or "eval"): layers_per_ipu may differ."""
        self.model.deparallelize()
        getattr(self.ipu_config, mode)()
        self.model.ipu_config = self.ipu_config
        self.model.parallelize(**self.ipu_config._parallelize_kwargs)

    def _training_executor(self) -> poptorch.PoplarExecutor:
        if self.training_model is None:
            self._reparallelize("train")
            self.training_model = poptorch.trainingModel(self.model.train(), self.opts,
                                                         self.create_optimizer())
        return self.training_model

    def _inference_executor(self) -> poptorch.PoplarExecutor:
        if self.inference_model is None:
            self._reparallelize("eval")
            self.inference_model = poptorch.inferenceModel(self.model.eval(), self.eval_opts)
        return self.inference_model

    # --- loops ----------------------------------------------------------------------------------
    def train(self) -> TrainOutput:
        """Train for max_steps calls (or num_train_epochs); returns steps, mean loss, metrics."""
        loader = self.get_train_dataloader()
        executor = self._training_executor()
        if self.args.compile_only:
            executor.compile(**next(iter(loader)))
            return TrainOutput(0, math.nan, {"compile_only": 1.0})
        total = self._total_steps(len(loader))
        losses, step = [], 0
        while step < total:
            for batch in loader:
                self._set_learning_rate(step, total)
                loss = float(_loss_of(executor(**batch)).float().mean())
                losses.append(loss)
                step += 1
                if step % self.args.logging_steps == 0 or step == total:
                    self.log_history.append({"loss": loss, "step": step,
                                             "learning_rate": self.optimizer.param_groups[0]["lr"]})
                if step == total:
                    break
        metrics = {"train_loss": sum(losses) / len(losses), "train_steps": float(step),
                   "train_samples_per_simulated_second": executor.plan.samples_per_second}
        return TrainOutput(step, metrics["train_loss"], metrics)

    def _total_steps(self, steps_per_epoch: int) -> int:
        if steps_per_epoch == 0:
            raise ValueError("the training set is smaller than one combined batch "
                             f"({self.args.per_device_train_batch_size} x "
                             f"{self.ipu_config.batch_size_factor()}); lower the batch size or "
                             f"the IPUConfig's replication, accumulation or device iterations")
        if self.args.max_steps > 0:
            return self.args.max_steps
        return math.ceil(self.args.num_train_epochs * steps_per_epoch)

    def _set_learning_rate(self, step: int, total: int) -> None:
        """Linear warmup then linear decay (or constant); pushed to the IPU with setOptimizer."""
        if self.args.lr_scheduler_type == "constant":
            return
        warmup = int(self.args.warmup_ratio * total)
        factor = (step + 1) / warmup if step < warmup else max(0.0, (total - step) / max(1, total - warmup))
        for group in self.optimizer.param_groups:
            group["lr"] = self.args.learning_rate * factor
        if step > 0:
            self.training_model.setOptimizer(self.optimizer)

    def evaluate(self, eval_dataset=None) -> dict[str, float]:
        """Loss (when the model returns one) and compute_metrics over the evaluation set."""
        loader = self.get_eval_dataloader(eval_dataset)
        executor = self._inference_executor()
        if self.args.compile_only:
            executor.compile(**next(iter(loader)))
            return {"compile_only": 1.0}
        logits, labels, losses = [], [], []
        for batch in loader:
            outputs = executor(**batch)
            logits.append(outputs["logits"] if isinstance(outputs, dict) else outputs[-1])
            if isinstance(outputs, dict) and outputs.get("loss") is not None:
                losses.append(outputs["loss"].float().mean())
            if "labels" in batch:
                labels.append(batch["labels"])
        metrics: dict[str, Any] = {"eval_samples": float(sum(len(x) for x in logits))}
        if losses:
            metrics["eval_loss"] = float(torch.stack(losses).mean())
        if self.compute_metrics is not None:
            prediction = EvalPrediction(torch.cat(logits).float(),
                                        torch.cat(labels) if labels else None)
            metrics.update({f"eval_{k}": v for k, v in self.compute_metrics(prediction).items()})
        return metrics

    # --- saving ---------------------------------------------------------------------------------
    def save_model(self, output_dir: str | None = None) -> None:
        """Write the model (in its original transformers class) and ipu_config.json."""
        output_dir = output_dir or self.args.output_dir
        os.makedirs(output_dir, exist_ok=True)
        self.model.deparallelize()
        pipelined_cls = type(self.model)
        self.model.__class__ = pipelined_cls.__mro__[1]  # the transformers class it extends
        try:
            self.model.save_pretrained(output_dir)
        finally:
            self.model.__class__ = pipelined_cls
            self.model.parallelize(**self.ipu_config._parallelize_kwargs)
        self.ipu_config.save_pretrained(output_dir)
