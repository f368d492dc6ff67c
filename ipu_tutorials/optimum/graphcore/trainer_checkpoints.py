"""IPUTrainer's checkpoints: the trainer state, weights, optimizer, scheduler and RNG states on disk."""
from __future__ import annotations

import dataclasses
import json
import os
import random

import numpy as np
import torch
from transformers import TrainerState
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR, get_last_checkpoint, rotate_checkpoints
from transformers.utils import CONFIG_NAME, WEIGHTS_NAME

from .modeling_utils import PipelineMixin

TRAINER_STATE_NAME = "trainer_state.json"
OPTIMIZER_NAME, SCHEDULER_NAME, RNG_NAME = "optimizer.pt", "scheduler.pt", "rng_state.pth"


@dataclasses.dataclass
class IPUTrainerState(TrainerState):
    """transformers' TrainerState (saved as trainer_state.json); global_step counts IPU calls."""


def checkpoint_dir(output_dir: str, global_step: int) -> str:
    return os.path.join(output_dir, f"{PREFIX_CHECKPOINT_DIR}-{global_step}")


def resolve_checkpoint(resume_from_checkpoint, output_dir: str) -> str | None:
    """The checkpoint directory to resume from (True: the last one in output_dir)."""
    if resume_from_checkpoint is None or resume_from_checkpoint is False:
        return None
    if resume_from_checkpoint is True:
        last = get_last_checkpoint(output_dir) if os.path.isdir(output_dir) else None
        if last is None:
            raise ValueError(f"No valid checkpoint found in output directory ({output_dir})")
        return last
    if not os.path.isfile(os.path.join(resume_from_checkpoint, WEIGHTS_NAME)):
        raise ValueError(f"Can't find a valid checkpoint at {resume_from_checkpoint}: it has no "
                         f"{WEIGHTS_NAME}")
    return resume_from_checkpoint


def save_weights(model: torch.nn.Module, output_dir: str) -> None:
    """pytorch_model.bin (plain tensors), and config.json for a transformers model."""
    os.makedirs(output_dir, exist_ok=True)
    state = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    _atomic_torch_save(state, os.path.join(output_dir, WEIGHTS_NAME))
    config = getattr(model, "config", None)
    if config is not None and hasattr(config, "save_pretrained"):
        original = next(c for c in type(model).__mro__ if not issubclass(c, PipelineMixin))
        config.architectures = [original.__name__]  # the transformers class, as save_pretrained writes
        config.save_pretrained(output_dir)


def load_weights(model: torch.nn.Module, checkpoint: str) -> None:
    state = torch.load(os.path.join(checkpoint, WEIGHTS_NAME), map_location="cpu", weights_only=True)
    with torch.no_grad():
        for name, tensor in model.state_dict().items():
            tensor.copy_(state[name].to(tensor.dtype))


def save_training_state(trainer, checkpoint: str) -> None:
    """Optimizer, scheduler, RNG states, trainer state and the arguments, beside the weights."""
    _atomic_torch_save(trainer.optimizer.state_dict(), os.path.join(checkpoint, OPTIMIZER_NAME))
    _atomic_torch_save(trainer.lr_scheduler.state_dict(), os.path.join(checkpoint, SCHEDULER_NAME))
    _atomic_torch_save(_rng_state(), os.path.join(checkpoint, RNG_NAME))
    _atomic_torch_save(trainer.args, os.path.join(checkpoint, "training_args.bin"))
    trainer.state.save_to_json(os.path.join(checkpoint, TRAINER_STATE_NAME))


def load_training_state(trainer, checkpoint: str) -> None:
    """What save_training_state wrote, except the arguments (never unpickled)."""
    load = lambda name: torch.load(os.path.join(checkpoint, name), map_location="cpu",  # noqa: E731
                                   weights_only=True)
    trainer.optimizer.load_state_dict(load(OPTIMIZER_NAME))
    trainer.lr_scheduler.load_state_dict(load(SCHEDULER_NAME))
    if os.path.isfile(os.path.join(checkpoint, RNG_NAME)):
        _set_rng_state(load(RNG_NAME))


def load_state(checkpoint: str) -> IPUTrainerState:
    return IPUTrainerState.load_from_json(os.path.join(checkpoint, TRAINER_STATE_NAME))


def rotate(output_dir: str, save_total_limit: int | None, best_model_checkpoint: str | None) -> None:
    """Keep the newest save_total_limit checkpoints (and the best one)."""
    rotate_checkpoints(output_dir, save_total_limit, best_model_checkpoint)


def _rng_state() -> dict:
    """RNG states as tensors and numbers, so that loading needs no unpickling."""
    name, keys, pos, has_gauss, gauss = np.random.get_state()
    version, internal, gauss_next = random.getstate()
    return {"python": [version, list(internal), gauss_next], "cpu": torch.get_rng_state(),
            "numpy": [name, torch.from_numpy(keys.astype(np.int64)), pos, has_gauss, gauss]}


def _set_rng_state(state: dict) -> None:
    version, internal, gauss_next = state["python"]
    random.setstate((version, tuple(internal), gauss_next))
    name, keys, pos, has_gauss, gauss = state["numpy"]
    np.random.set_state((name, keys.numpy().astype(np.uint32), pos, has_gauss, gauss))
    torch.set_rng_state(state["cpu"])


def _atomic_torch_save(obj, path: str) -> None:
    partial = path + ".partial"
    torch.save(obj, partial)
    os.replace(partial, path)


__all__ = ["CONFIG_NAME", "IPUTrainerState", "checkpoint_dir", "load_state", "load_training_state",
           "load_weights", "resolve_checkpoint", "rotate", "save_training_state", "save_weights"]
