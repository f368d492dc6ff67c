"""Shared steps of every family's parallelize(): embeddings, layers and heads onto IPUs."""
from __future__ import annotations

from torch import nn

from .... import poptorch
from ..modeling_utils import SerializedEmbedding, get_layer_ipu, recomputation_checkpoint


def begin(owner: nn.Module, attribute: str, user_id: str, ipu_id: int) -> None:
    """Make `owner.<attribute>` begin the block `user_id` on IPU `ipu_id`."""
    setattr(owner, attribute, poptorch.BeginBlock(getattr(owner, attribute), user_id, ipu_id=ipu_id))


def serialize_embedding(model, owner: nn.Module, attribute: str) -> None:
    """Replace `owner.<attribute>` by a SerializedEmbedding when the IPUConfig asks for one."""
    factor = model.ipu_config._embedding_serialization_factor or 1
    if factor > 1:
        setattr(owner, attribute, SerializedEmbedding.from_model(getattr(owner, attribute), factor))


def unserialize_embedding(owner: nn.Module, attribute: str) -> None:
    embedding = getattr(owner, attribute)
    if isinstance(embedding, SerializedEmbedding):
        setattr(owner, attribute, embedding.to_model())


def refuse_tied_serialization(model) -> None:
    """Models whose output layer shares the embedding's weight would need SerializedLinear."""
    if (model.ipu_config._embedding_serialization_factor or 1) > 1:
        raise NotImplementedError(
            f"{type(model).__name__} ties its output projection to the word embedding; "
            f"optimum-graphcore serializes that projection (SerializedLinear), which ipu_tutorials "
            f"does not simulate. Use embedding_serialization_factor=1 for this model.")


def place_layers(model, layers: nn.ModuleList, prefix: str, checkpoint_last: bool) -> list[int]:
    """Layer i begins block f"{prefix}{i}" on get_layer_ipu's IPU; optional checkpoints."""
    layer_ipu = get_layer_ipu(model.ipu_config, layers)
    for index, layer in enumerate(layers):
        last = index == len(layers) - 1
        if model.ipu_config.recompute_checkpoint_every_layer and (checkpoint_last or not last):
            model._hooks.append(recomputation_checkpoint(layer))
        layers[index] = poptorch.BeginBlock(layer, f"{prefix}{index}", ipu_id=layer_ipu[index])
    return layer_ipu


def last_ipu(model) -> int:
    return model.ipu_config._ipus_per_replica - 1
