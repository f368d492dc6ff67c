"""Serialized layers: an embedding looked up, and a linear layer multiplied, in slices."""
from __future__ import annotations

import copy
import logging

import torch
from torch import nn

from ... import poptorch

_logger = logging.getLogger(__name__)
_SPLIT_MODES = (poptorch.MatMulSerializationMode.OutputChannels,
                poptorch.MatMulSerializationMode.ReducingDim)


def place_splits(splits: nn.ModuleList, splits_per_ipu: list[int], kind: str) -> None:
    """Each IPU's first split begins a block on that IPU: [3, 1] puts splits 0-2 on IPU 0, 3 on IPU 1."""
    if sum(splits_per_ipu) != len(splits):
        raise ValueError(f"splits_per_ipu={splits_per_ipu} places {sum(splits_per_ipu)} splits but "
                         f"the layer has {len(splits)}; make the entries add up to {len(splits)}")
    first = 0
    for ipu_id, count in enumerate(splits_per_ipu):
        if count:
            last = first + count - 1
            shard = f"{first}-{last}" if last != first else f"{first}"
            _logger.info("%s splits: %s --> IPU %d", kind, shard, ipu_id)
            splits[first] = poptorch.BeginBlock(splits[first], f"{kind}-{shard}", ipu_id=ipu_id)
        first += count


class SerializedEmbedding(nn.Module):
    """An nn.Embedding looked up in `serialization_factor` slices of its vocabulary.

    On an IPU this caps the temporary memory of the lookup and of its gradient; the result is
    the same as the whole embedding's. The slice holding `padding_idx` keeps it (shifted).
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
                freeze=not embedding.weight.requires_grad, padding_idx=self._local_padding(i))
            for i in range(serialization_factor))

    def _local_padding(self, split: int) -> int | None:
        if self.padding_idx is None or self.padding_idx // self.split_size != split:
            return None
        return self.padding_idx - split * self.split_size

    @classmethod
    def from_model(cls, embedding: nn.Embedding, serialization_factor: int) -> "SerializedEmbedding":
        return cls(embedding, serialization_factor)

    def parallelize(self, splits_per_ipu: list[int]) -> "SerializedEmbedding":
        """Spread the slices over IPUs: splits_per_ipu[i] slices on IPU i (0 for none)."""
        place_splits(self.split_embeddings, splits_per_ipu, "Embedding")
        return self

    def to_model(self) -> nn.Embedding:
        """The equivalent single nn.Embedding (for saving in the original format)."""
        weight = torch.cat([e.weight.detach() for e in self.split_embeddings])
        freeze = not self.split_embeddings[0].weight.requires_grad
        return nn.Embedding.from_pretrained(weight, freeze=freeze, padding_idx=self.padding_idx)

    def forward(self, indices: torch.Tensor) -> torch.Tensor:  # (B, T) -> (B, T, C)
        result = None
        for i, split in enumerate(self.split_embeddings):
            start = i * self.split_size
            inside = (indices >= start) & (indices < start + self.split_size)
            local = torch.where(inside, indices - start, torch.zeros_like(indices))
            part = split(local) * inside.unsqueeze(-1).to(split.weight.dtype)
            result = part if result is None else result + part
        return result


class SerializedLinear(nn.Linear):
    """nn.Linear whose product is computed by poptorch.serializedMatMul in `factor` pieces.

    The result equals nn.Linear's; on an IPU the pieces run one after another, which lowers
    the temporary memory of the product and of its gradient.
    """

    def __init__(self, in_features: int, out_features: int, factor: int, bias: bool = False,
                 mode=poptorch.MatMulSerializationMode.OutputChannels):
        super().__init__(in_features, out_features, bias)
        self.mode = mode
        self.factor = factor

    @classmethod
    def from_model(cls, model: nn.Linear, factor: int,
                   mode=poptorch.MatMulSerializationMode.OutputChannels) -> "SerializedLinear":
        clone = copy.deepcopy(model)
        clone.__class__ = cls
        clone.factor, clone.mode = factor, mode
        return clone

    def to_model(self) -> nn.Linear:
        original = copy.deepcopy(self)
        del original.factor, original.mode
        original.__class__ = nn.Linear
        return original

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        output = poptorch.serializedMatMul(x, self.weight.t(), self.mode, self.factor)
        return output + self.bias if self.bias is not None else output


class SplitProjection(nn.Module):
    """nn.Linear split into `serialization_factor` smaller linear layers whose results combine.

    OutputChannels: each piece computes a slice of the outputs (concatenated);
    ReducingDim: each piece takes a slice of the inputs (partial sums added). The pieces can
    sit on different IPUs (`parallelize`), so no IPU holds the whole weight.
    """

    def __init__(self, linear: nn.Linear, serialization_factor: int,
                 serialization_mode=poptorch.MatMulSerializationMode.OutputChannels):
        super().__init__()
        if serialization_mode not in _SPLIT_MODES:
            raise ValueError(f"`SplitProjection` `serialization_mode` can only be "
                             f"{_SPLIT_MODES[0]} or {_SPLIT_MODES[1]}. You provided: "
                             f"serialization_mode={serialization_mode}")
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.serialization_mode = serialization_mode
        by_outputs = serialization_mode == poptorch.MatMulSerializationMode.OutputChannels
        name, size = ("out_features", self.out_features) if by_outputs else ("in_features", self.in_features)
        if size % serialization_factor:
            raise ValueError(f"linear.{name}={size} must be divisible by "
                             f"serialization_factor={serialization_factor}")
        self.split_size = size // serialization_factor
        pieces = linear.weight.detach().split(self.split_size, dim=0 if by_outputs else 1)
        self.split_linear_layers = nn.ModuleList(self._piece(w) for w in pieces)
        self.bias = None if linear.bias is None else nn.Parameter(linear.bias.detach().clone())

    @staticmethod
    def _piece(weight: torch.Tensor) -> nn.Linear:
        layer = nn.Linear(weight.shape[1], weight.shape[0], bias=False, dtype=weight.dtype)
        with torch.no_grad():
            layer.weight.copy_(weight)
        return layer

    @classmethod
    def from_model(cls, linear: nn.Linear, serialization_factor: int,
                   serialization_mode=poptorch.MatMulSerializationMode.OutputChannels) -> "SplitProjection":
        return cls(linear, serialization_factor, serialization_mode)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.serialization_mode == poptorch.MatMulSerializationMode.OutputChannels:
            out = torch.cat([layer(x) for layer in self.split_linear_layers], dim=-1)
        else:
            parts = x.split(self.split_size, dim=-1)
            out = sum(layer(part) for layer, part in zip(self.split_linear_layers, parts))
        return out + self.bias if self.bias is not None else out

    def to_model(self) -> nn.Linear:
        """The equivalent single nn.Linear."""
        by_outputs = self.serialization_mode == poptorch.MatMulSerializationMode.OutputChannels
        weight = torch.cat([layer.weight.detach() for layer in self.split_linear_layers],
                           dim=0 if by_outputs else 1)
        layer = nn.Linear(self.in_features, self.out_features, bias=self.bias is not None,
                          dtype=weight.dtype)
        with torch.no_grad():
            layer.weight.copy_(weight)
            if self.bias is not None:
                layer.bias.copy_(self.bias)
        return layer

    def parallelize(self, splits_per_ipu: list[int]) -> "SplitProjection":
        """Spread the pieces over IPUs: splits_per_ipu[i] pieces on IPU i (0 for none)."""
        place_splits(self.split_linear_layers, splits_per_ipu, "Linear")
        return self
