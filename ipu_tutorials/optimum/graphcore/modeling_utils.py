"""Pipelining helpers: layers per IPU, the pipelined-model registry, checkpoints, serialized embeddings."""
from __future__ import annotations

import copy
from typing import Sequence

import torch
from torch import nn

from ... import poptorch
from ._config_fields import IncompatibleIPUConfigError
from .ipu_configuration import IPUConfig

_PRETRAINED_TO_PIPELINED_REGISTRY: dict[type, type] = {}


def register(transformers_cls: type):
    """Class decorator: the decorated class is the pipelined version of `transformers_cls`."""
    def wrapper(cls):
        _PRETRAINED_TO_PIPELINED_REGISTRY[transformers_cls] = cls
        return cls
    return wrapper


def to_pipelined(model: nn.Module, ipu_config: IPUConfig, force: bool = False) -> nn.Module:
    """A pipelined copy of a transformers model, carrying a copy of `ipu_config`.

    The copy has the same weights (it is a deep copy whose class becomes the pipelined class,
    so meta-device models stay on the meta device); call `.parallelize()` to place it.

    Args:
        model: a BERT, GPT-2 or ViT model from transformers, or a model already using PipelineMixin.
        ipu_config: the configuration the pipelined model will follow.
        force: for an unregistered class, build a pipelined class on the fly (its
            parallelize() places nothing).

    Raises:
        KeyError: the model's class has no pipelined version and force is False.
    """
    from . import models  # noqa: F401  (fills the registry; imports transformers)

    pipelined_cls = _PRETRAINED_TO_PIPELINED_REGISTRY.get(type(model))
    if pipelined_cls is None and isinstance(model, PipelineMixin):
        pipelined_cls = type(model)
    if pipelined_cls is None and force:
        pipelined_cls = type(f"Pipelined{type(model).__name__}", (type(model), PipelineMixin), {})
    if pipelined_cls is None:
        known = ", ".join(sorted(c.__name__ for c in _PRETRAINED_TO_PIPELINED_REGISTRY))
        raise KeyError(f"{type(model).__name__} pipelined version not found in registry. "
                       f"Pipelined versions exist for: {known}. Pass force=True to wrap it anyway "
                       f"and place its layers yourself with poptorch.BeginBlock.")
    return pipelined_cls.from_transformers(model, ipu_config)


class PipelineMixin:
    """Adds `ipu_config`, `parallelize()` and `deparallelize()` to a transformers model class."""

    @classmethod
    def from_transformers(cls, model: nn.Module, ipu_config: IPUConfig) -> nn.Module:
        """A deep copy of `model` turned into this class, with a copy of `ipu_config`.

        optimum-graphcore builds `cls(config)` and loads the state dict; a copy gives the same
        weights and also works for models on the meta device.
        """
        clone = copy.deepcopy(model)
        clone.__class__ = cls
        clone.ipu_config = copy.deepcopy(ipu_config)
        return clone

    @classmethod
    def from_model(cls, model: nn.Module) -> nn.Module:
        clone = copy.deepcopy(model)
        clone.__class__ = cls
        clone.ipu_config = IPUConfig()
        return clone

    def _has_ipu_config_check(self) -> None:
        if getattr(self, "_ipu_config", None) is None:
            raise AttributeError("No IPUConfig was found. Please set the ipu_config attribute: "
                                 "model.ipu_config = IPUConfig(layers_per_ipu=[...])")

    @property
    def ipu_config(self) -> IPUConfig:
        """The model's IPUConfig (an AttributeError if none was set)."""
        self._has_ipu_config_check()
        return self._ipu_config

    @ipu_config.setter
    def ipu_config(self, value: IPUConfig) -> None:
        if not isinstance(value, IPUConfig):
            raise TypeError(f"ipu_config must be an instance of IPUConfig, but {type(value)} was "
                            f"provided")
        self.__dict__["_ipu_config"] = value  # not a submodule or parameter: bypass nn.Module

    def parallelize(self, **kwargs) -> nn.Module:
        """Place the model's layers on IPUs (the base version only checks for an IPUConfig)."""
        self._hooks = []
        self._has_ipu_config_check()
        return self

    def deparallelize(self) -> nn.Module:
        """Undo `parallelize()`: remove its hooks and every poptorch Block annotation."""
        for handle in getattr(self, "_hooks", []):
            handle.remove()
        self._hooks = []
        poptorch.removeBlocks(self)
        return self


def _expand_layers_per_ipu_wildcard(ipu_config: IPUConfig,
                                    target_number_of_layers: int | Sequence | None = None) -> list[int]:
    """The current mode's layers_per_ipu with each -1 replaced by a share of the layers.

    Several -1 share the layers the others leave evenly; the remainder goes to the last of them.
    """
    name = ipu_config._get_managed_attr_mode_name("layers_per_ipu")
    ipus_name = ipu_config._get_managed_attr_mode_name("ipus_per_replica")
    layers, ipus = list(ipu_config._layers_per_ipu), ipu_config._ipus_per_replica
    if any(not isinstance(n, int) or n < -1 for n in layers):
        raise IncompatibleIPUConfigError(f"Invalid values in {name}. {name}={layers}: every entry "
                                         f"must be a number of layers (>= 0) or -1 (a share of "
                                         f"the remaining layers).")
    if ipus < 1:
        raise IncompatibleIPUConfigError(f"Invalid value for {ipus_name}={ipus}: it must be >= 1.")
    if target_number_of_layers is None:
        return layers
    total = (target_number_of_layers if isinstance(target_number_of_layers, int)
             else len(target_number_of_layers))
    if ipus == 1:
        return [total]
    if all(n == -1 for n in layers) and (len(layers) == 1 or len(layers) == ipus):
        return [total // ipus] * (ipus - 1) + [total // ipus + total % ipus]
    if len(layers) != ipus:
        raise IncompatibleIPUConfigError(
            f"{name} has a non-default value set, but its length does not match {ipus_name}. "
            f"{name}={layers}, {ipus_name}={ipus}. Give one entry per IPU.")
    wildcards = [i for i, n in enumerate(layers) if n == -1]
    fixed = sum(n for n in layers if n != -1)
    if not wildcards:
        if fixed != total:
            raise IncompatibleIPUConfigError(
                f"{name} does not define the correct number of layers for the current model. The "
                f"current IPU Config specifies IPU assignments for {fixed} layers but there are "
                f"{total} layers in the model. {name}={layers}. Make the entries add up to {total}, "
                f"or use -1 for the IPUs that should share the rest.")
        return layers
    left = total - fixed
    if left < 0:
        raise IncompatibleIPUConfigError(
            f"{name}={layers} places {fixed} layers but the model has only {total}; lower the "
            f"entries so that the -1 entries have layers left to share.")
    expanded = list(layers)
    for i in wildcards:
        expanded[i] = left // len(wildcards)
    expanded[wildcards[-1]] += left % len(wildcards)
    return expanded


def get_layer_ipu(ipu_config: IPUConfig, target_number_of_layers: int | Sequence | None = None) -> list[int]:
    """The IPU of each layer: layers_per_ipu [1, 2] gives [0, 1, 1].

    Args:
        ipu_config: the configuration (its current mode's layers_per_ipu and ipus_per_replica).
        target_number_of_layers: the model's layer count, or its sequence of layers.

    Returns:
        One IPU index per layer.

    Raises:
        IncompatibleIPUConfigError: when layers_per_ipu cannot place that many layers.
    """
    layer_ipu: list[int] = []
    for ipu, count in enumerate(_expand_layers_per_ipu_wildcard(ipu_config, target_number_of_layers)):
        layer_ipu += [ipu] * count
    return layer_ipu


def recomputation_checkpoint(module: nn.Module) -> torch.utils.hooks.RemovableHandle:
    """Checkpoint (stash instead of recompute) the module's outputs; returns the hook's handle."""
    def checkpoint_outputs(module, inputs, outputs):
        if isinstance(outputs, torch.Tensor):
            return poptorch.recomputationCheckpoint(outputs)
        if isinstance(outputs, tuple):
            return tuple(poptorch.recomputationCheckpoint(y) if isinstance(y, torch.Tensor) else y
                         for y in outputs)
        return outputs
    return module.register_forward_hook(checkpoint_outputs)


class SerializedEmbedding(nn.Module):
    """An nn.Embedding looked up in `serialization_factor` slices of its vocabulary.

    On an IPU this caps the temporary memory of the lookup and of its gradient; the result is
    the same as the whole embedding's.
    """

    def __init__(self, embedding: nn.Embedding, serialization_factor: int):
        super().__init__()
        if embedding.num_embeddings % serialization_factor:
            raise ValueError(f"embedding_serialization_factor ({serialization_factor}) must divide "
                             f"the vocabulary size ({embedding.num_embeddings}); pick a divisor")
        self.serialization_factor = serialization_factor
        self.num_embeddings = embedding.num_embeddings
        self.padding_idx = embedding.padding_idx
        self.split_size = self.num_embeddings // serialization_factor
        weight = embedding.weight.detach()
        self.split_embeddings = nn.ModuleList(
            nn.Embedding.from_pretrained(
                weight[i * self.split_size:(i + 1) * self.split_size].clone(),
                freeze=not embedding.weight.requires_grad)
            for i in range(serialization_factor))

    @classmethod
    def from_model(cls, embedding: nn.Embedding, serialization_factor: int) -> "SerializedEmbedding":
        return cls(embedding, serialization_factor)

    def to_model(self) -> nn.Embedding:
        """The equivalent single nn.Embedding (for saving in the original format)."""
        weight = torch.cat([e.weight.detach() for e in self.split_embeddings])
        return nn.Embedding.from_pretrained(weight, freeze=False, padding_idx=self.padding_idx)

    def forward(self, indices: torch.Tensor) -> torch.Tensor:  # (B, T) -> (B, T, C)
        result = None
        for i, split in enumerate(self.split_embeddings):
            start = i * self.split_size
            inside = (indices >= start) & (indices < start + self.split_size)
            local = torch.where(inside, indices - start, torch.zeros_like(indices))
            part = split(local) * inside.unsqueeze(-1).to(split.weight.dtype)
            result = part if result is None else result + part
        return result
