"""IPUTrainer's evaluation loop: run the inference executor over a dataloader, gather, score."""
from __future__ import annotations

import numpy as np
import torch
from transformers.trainer_pt_utils import nested_concat, nested_numpify
from transformers.trainer_utils import EvalLoopOutput, EvalPrediction, denumpify_detensorize


def split_outputs(outputs, has_labels: bool, ignore_keys: list[str]):
    """(loss or None, logits): the loss is outputs["loss"] or, with labels, the first output."""
    if isinstance(outputs, dict):
        loss = outputs.get("loss") if has_labels else None
        logits = tuple(v for k, v in outputs.items() if k not in ignore_keys + ["loss"])
    else:
        outputs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
        loss, logits = (outputs[0], tuple(outputs[1:])) if has_labels else (None, tuple(outputs))
    return loss, (logits[0] if len(logits) == 1 else logits)


def _numpy(value):
    if hasattr(value, "layers"):  # a transformers Cache (past_key_values): its tensors, per layer
        value = tuple((layer.keys, layer.values) for layer in value.layers)
    if isinstance(value, torch.Tensor) and value.dtype in (torch.float16, torch.bfloat16):
        value = value.float()
    if isinstance(value, (tuple, list)):
        return type(value)(_numpy(v) for v in value)
    return nested_numpify(value) if isinstance(value, torch.Tensor) else value


def evaluation_loop(trainer, dataloader, prediction_loss_only: bool, ignore_keys: list[str],
                    metric_key_prefix: str) -> EvalLoopOutput:
    """Every batch through the inference executor; losses weighted by batch size."""
    executor = trainer._inference_executor()
    label_names = trainer.label_names
    losses, preds, labels, samples = [], None, None, 0
    for batch in dataloader:
        has_labels = bool(label_names) and all(batch.get(n) is not None for n in label_names)
        outputs = executor(**batch)
        loss, logits = split_outputs(outputs, has_labels, ignore_keys)
        size = _batch_size(batch)
        samples += size
        if loss is not None:
            losses.append(np.repeat(float(loss.float().mean()), size))
        if prediction_loss_only:
            continue
        batch_labels = _labels(batch, label_names) if has_labels else None
        if trainer.preprocess_logits_for_metrics is not None:
            logits = trainer.preprocess_logits_for_metrics(logits, batch_labels)
        preds = _concat(preds, _numpy(logits))
        labels = _concat(labels, _numpy(batch_labels)) if batch_labels is not None else labels
    metrics = _metrics(trainer, preds, labels, losses, metric_key_prefix)
    return EvalLoopOutput(predictions=preds, label_ids=labels, metrics=metrics, num_samples=samples)


def _metrics(trainer, preds, labels, losses, prefix: str) -> dict:
    metrics = {}
    if trainer.compute_metrics is not None and preds is not None and labels is not None:
        metrics = trainer.compute_metrics(EvalPrediction(predictions=preds, label_ids=labels))
    metrics = denumpify_detensorize(metrics)
    if losses:
        metrics["loss"] = float(np.concatenate(losses).mean())
    return {(k if k.startswith(f"{prefix}_") else f"{prefix}_{k}"): v for k, v in metrics.items()}


def _labels(batch: dict, label_names: list[str]):
    found = tuple(batch[name] for name in label_names)
    return found[0] if len(found) == 1 else found


def _concat(gathered, new):
    return new if gathered is None else nested_concat(gathered, new, padding_index=-100)


def _batch_size(batch: dict) -> int:
    for value in batch.values():
        if isinstance(value, torch.Tensor) and value.dim() > 0:
            return value.shape[0]
    return 1
