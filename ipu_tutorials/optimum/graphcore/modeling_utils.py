"""Pipelining helpers: layers per IPU, the pipelined-model registry, checkpoints, serialized embeddings."""
from __future__ import annotations

import copy
from typing import Sequence

import torch
from torch import nn

from ... import poptorch
from ._config_fields import IncompatibleIPUConfigError
from .ipu_configuration import IPUConfig
from .serialized_layers import SerializedEmbedding, SerializedLinear, SplitProjection  # noqa: F401

_PRETRAINED_TO_PIPELINED_REGISTRY: dict[type, type] = {}


def register(transformers_cls: type | None = None):
    """Class decorator: the decorated class is the pipelined version of `transformers_cls`
    (by default its first base other than PipelineMixin, as in optimum-graphcore)."""
    def wrapper(cls):
        original = transformers_cls or next(b for b in cls.__bases__ if b is not PipelineMixin)
        _PRETRAINED_TO_PIPELINED_REGISTRY[original] = cls
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

    def parallelize(self) -> nn.Module:
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
    if ipu_config._release == "v0.5" and -1 not in layers:  # v0.5's get_layer_ipu: the list alone
        if sum(layers) < total:
            raise IncompatibleIPUConfigError(
                f"{name} does not define enough layers for the current model. The current IPU "
                f"Config specifies IPU assignments for {sum(layers)} layers but there are {total} "
                f"layers in the model. {name}={layers}")
        return layers
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


def _encoder_cut(ipu_config: IPUConfig, layers: list[int], num_encoder_layers: int,
                 num_decoder_layers: int) -> int:
    """The number of IPUs the encoder takes: its layers end there, and the count is a power of 2.

    Several cuts can qualify when IPUs hold no layers; the largest is taken.
    """
    ends, cuts = 0, []
    for ipu, count in enumerate(layers, start=1):
        ends += count
        if ends == num_encoder_layers and ipu & (ipu - 1) == 0:
            cuts.append(ipu)
    if not cuts:
        name = ipu_config._get_managed_attr_mode_name("layers_per_ipu")
        raise IncompatibleIPUConfigError(
            f"Unable to find a valid split of ipu_config.{name}: ipu_config.{name}="
            f"{ipu_config._layers_per_ipu}, num_encoder_layers={num_encoder_layers}, "
            f"num_decoder_layers={num_decoder_layers}. The encoder's layers must end on an IPU "
            f"boundary (an IPU cannot hold both encoder and decoder layers) and the encoder must "
            f"take a power-of-2 number of IPUs.")
    return max(cuts)


def _split_serialized(ipu_config: IPUConfig, parts: dict, cut: int, kind: str, side: str) -> None:
    """A serialized layer's per-IPU splits all go to one side (embedding: encoder, projection: decoder)."""
    splits = getattr(ipu_config, f"_serialized_{kind}_splits_per_ipu")
    if splits is None:
        return
    kept, other = (splits[:cut], splits[cut:]) if side == "encoder" else (splits[cut:], splits[:cut])
    if sum(other):
        layer = "SerializedEmbedding" if kind == "embedding" else "SplitProjection"
        name = ipu_config._get_managed_attr_mode_name(f"serialized_{kind}_splits_per_ipu")
        raise ValueError(f"The `{layer}` must have all splits placed on the {side}, but "
                         f"{name}={splits} places {other} on the other part; move those splits "
                         f"onto the {side}'s IPUs.")
    setattr(parts[side], f"_serialized_{kind}_splits_per_ipu", kept)
    setattr(parts["decoder" if side == "encoder" else "encoder"], f"_serialized_{kind}_splits_per_ipu", None)


def split_encoder_decoder_ipu_config(ipu_config: IPUConfig, num_encoder_layers: int,
                                     num_decoder_layers: int) -> list[IPUConfig]:
    """Split an encoder-decoder model's IPUConfig into the encoder's and the decoder's.

    The current mode's layers_per_ipu (wildcards expanded), matmul_proportion and serialized
    splits are cut where the encoder's layers end; ipus_per_replica follows. Other values are
    copied.

    Returns:
        [encoder_ipu_config, decoder_ipu_config]

    Raises:
        IncompatibleIPUConfigError: fewer than 2 IPUs, or no IPU boundary (at a power of 2)
            between encoder and decoder layers. ValueError: serialized splits on the wrong part.
    """
    if ipu_config._ipus_per_replica < 2:
        name = ipu_config._get_managed_attr_mode_name("ipus_per_replica")
        raise IncompatibleIPUConfigError(
            f"Need {name} to be at least 2 to split ipu_config into encoder and decoder configs; "
            f"{name}={ipu_config._ipus_per_replica}")
    layers = _expand_layers_per_ipu_wildcard(ipu_config, num_encoder_layers + num_decoder_layers)
    cut = _encoder_cut(ipu_config, layers, num_encoder_layers, num_decoder_layers)
    parts = {"encoder": copy.deepcopy(ipu_config), "decoder": copy.deepcopy(ipu_config)}
    _split_serialized(ipu_config, parts, cut, "embedding", "encoder")
    _split_serialized(ipu_config, parts, cut, "projection", "decoder")
    proportion = ipu_config._matmul_proportion
    for side, part_layers in (("encoder", layers[:cut]), ("decoder", layers[cut:])):
        parts[side]._layers_per_ipu = part_layers
        parts[side]._ipus_per_replica = len(part_layers)
        if isinstance(proportion, list):
            parts[side]._matmul_proportion = proportion[:cut] if side == "encoder" else proportion[cut:]
    return [parts["encoder"], parts["decoder"]]
