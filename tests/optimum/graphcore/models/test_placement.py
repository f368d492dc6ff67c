"""_placement.py: the shared steps of parallelize(): layers onto IPUs, embeddings serialized."""
import pytest
import torch

from ipu_tutorials.optimum.graphcore import IPUConfig
from ipu_tutorials.optimum.graphcore.modeling_utils import SerializedEmbedding, to_pipelined
from ipu_tutorials.optimum.graphcore.models import _placement

transformers = pytest.importorskip("transformers")


class Owner(torch.nn.Module):
    """Stands for a model: an IPUConfig, recomputation hooks, an embedding and layers."""

    def __init__(self, ipu_config):
        super().__init__()
        self.ipu_config, self._hooks = ipu_config, []
        self.embedding = torch.nn.Embedding(12, 4)
        self.layers = torch.nn.ModuleList(torch.nn.Linear(4, 4) for _ in range(4))


def test_layers_begin_blocks_on_their_ipus_with_checkpoints_but_the_last():
    owner = Owner(IPUConfig(layers_per_ipu=[1, 3], recompute_checkpoint_every_layer=True))
    assert (_placement.place_layers(owner, owner.layers, "Layer", checkpoint_last=False) ==
            [0, 1, 1, 1])
    blocks = [repr(hook) for layer in owner.layers for hook in layer._forward_pre_hooks.values()
              if repr(hook).startswith("BeginBlock")]
    assert blocks == [f"BeginBlock(user_id='Layer{i}', ipu_id={ipu})"
                      for i, ipu in enumerate([0, 1, 1, 1])]
    assert len(owner._hooks) == 3 and _placement.last_ipu(owner) == 1


def test_an_embedding_is_serialized_only_when_asked_and_restored_whole():
    owner = Owner(IPUConfig(embedding_serialization_factor=3))
    weight = owner.embedding.weight.detach().clone()
    _placement.serialize_embedding(owner, owner, "embedding")
    assert isinstance(owner.embedding, SerializedEmbedding)
    _placement.unserialize_embedding(owner, "embedding")
    assert isinstance(owner.embedding, torch.nn.Embedding)
    assert torch.equal(owner.embedding.weight, weight)
    plain = Owner(IPUConfig())
    _placement.serialize_embedding(plain, plain, "embedding")
    assert type(plain.embedding) is torch.nn.Embedding


def test_tied_output_layers_refuse_embedding_serialization():
    config = transformers.BertConfig(vocab_size=96, hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=64)
    model = to_pipelined(transformers.BertForMaskedLM(config),
                         IPUConfig(layers_per_ipu=[1, 1], embedding_serialization_factor=2))
    with pytest.raises(NotImplementedError, match="SerializedLinear"):
        model.parallelize()
