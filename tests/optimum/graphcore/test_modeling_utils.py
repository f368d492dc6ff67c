"""get_layer_ipu and its wildcard, PipelineMixin, recomputation checkpoints, SerializedEmbedding."""
import pytest
import torch
from torch import nn

from ipu_tutorials import poptorch
from ipu_tutorials.optimum.graphcore import IPUConfig
from ipu_tutorials.optimum.graphcore.ipu_configuration import IncompatibleIPUConfigError
from ipu_tutorials.optimum.graphcore.modeling_utils import (PipelineMixin, SerializedEmbedding,
                                                            get_layer_ipu,
                                                            recomputation_checkpoint)


@pytest.mark.parametrize("kwargs,layers,expected", [
    ({"layers_per_ipu": [1, 2]}, 3, [0, 1, 1]),
    ({"layers_per_ipu": [3, 7, 7, 7]}, 24, [0] * 3 + [1] * 7 + [2] * 7 + [3] * 7),
    ({"layers_per_ipu": [-1], "ipus_per_replica": 4}, 10, [0, 0, 1, 1, 2, 2, 3, 3, 3, 3]),
    ({"layers_per_ipu": [-1, -1, -1, -1]}, 8, [0, 0, 1, 1, 2, 2, 3, 3]),
    ({"layers_per_ipu": [1, -1, -1, 2]}, 8, [0, 1, 1, 2, 2, 2, 3, 3]),
    ({"layers_per_ipu": [5, 5]}, [nn.Linear(1, 1)] * 10, [0] * 5 + [1] * 5),
    ({"layers_per_ipu": [-1, -1], "ipus_per_replica": 1}, 3, [0, 0, 0]),  # one IPU takes all
    ({"layers_per_ipu": [0, 4]}, 4, [1, 1, 1, 1]),
])
def test_get_layer_ipu(kwargs, layers, expected):
    assert get_layer_ipu(IPUConfig(**kwargs), layers) == expected


def test_get_layer_ipu_uses_the_inference_layers_in_eval_mode():
    config = IPUConfig(layers_per_ipu=[2, 2], inference_layers_per_ipu=[4])
    assert get_layer_ipu(config.eval(), 4) == [0, 0, 0, 0]
    assert get_layer_ipu(config.train(), 4) == [0, 0, 1, 1]


@pytest.mark.parametrize("kwargs,layers,message", [
    ({"layers_per_ipu": [2, 2]}, 5, r"does not define the correct number of layers .* assignments "
                                    r"for 4 layers but there are 5 layers"),
    ({"layers_per_ipu": [-1, 2], "ipus_per_replica": 3}, 6,
     r"non-default value set, but its length does not match ipus_per_replica"),
    ({"layers_per_ipu": [5, -1]}, 3, r"places 5 layers but the model has only 3"),
])
def test_get_layer_ipu_errors(kwargs, layers, message):
    with pytest.raises(IncompatibleIPUConfigError, match=message):
        get_layer_ipu(IPUConfig(**kwargs), layers)


def test_invalid_entries_are_named():
    config = IPUConfig(layers_per_ipu=[1, 1])
    object.__setattr__(config, "layers_per_ipu", [1, -3])  # bypass the attribute validator
    with pytest.raises(IncompatibleIPUConfigError, match=r"Invalid values in layers_per_ipu"):
        get_layer_ipu(config, 2)


class Stack(nn.Sequential, PipelineMixin):
    """A user model using PipelineMixin directly."""

    def parallelize(self):
        super().parallelize()
        for index, ipu in enumerate(get_layer_ipu(self.ipu_config, self)):
            self[index] = poptorch.BeginBlock(self[index], f"L{index}", ipu_id=ipu)
        return self


def test_pipeline_mixin_needs_an_ipu_config():
    model = Stack(nn.Linear(2, 2))
    with pytest.raises(AttributeError, match="No IPUConfig was found"):
        model.parallelize()
    with pytest.raises(TypeError, match="ipu_config must be an instance of IPUConfig"):
        model.ipu_config = {"layers_per_ipu": [1]}


def test_parallelize_then_deparallelize_removes_every_block():
    model = Stack(nn.Linear(2, 2), nn.Linear(2, 2))
    model.ipu_config = IPUConfig(layers_per_ipu=[1, 1])
    model.parallelize()
    assert "BeginBlock(user_id='L1', ipu_id=1)" in repr(list(model[1]._forward_pre_hooks.values()))
    model.deparallelize()
    assert not model[0]._forward_pre_hooks and not model[1]._forward_pre_hooks


def test_recomputation_checkpoint_marks_the_module_output():
    layer = nn.Linear(3, 3)
    handle = recomputation_checkpoint(layer)
    x = torch.randn(2, 3)
    assert torch.equal(layer(x), nn.functional.linear(x, layer.weight, layer.bias))
    handle.remove()
    assert not layer._forward_hooks


def test_serialized_embedding_equals_the_embedding_in_value_and_gradient():
    embedding = nn.Embedding(12, 4, padding_idx=0)
    serialized = SerializedEmbedding.from_model(embedding, 3)
    ids = torch.tensor([[0, 3, 4, 11], [7, 8, 2, 5]])
    assert torch.allclose(serialized(ids), embedding(ids))
    serialized(ids).square().sum().backward()
    embedding(ids).square().sum().backward()
    grads = torch.cat([e.weight.grad for e in serialized.split_embeddings])
    assert torch.allclose(grads, embedding.weight.grad)
    assert torch.equal(serialized.to_model().weight, embedding.weight.detach())


def test_serialized_embedding_needs_a_divisor_of_the_vocabulary():
    with pytest.raises(ValueError, match="must divide the vocabulary size \\(10\\)"):
        SerializedEmbedding(nn.Embedding(10, 2), 3)


def test_split_encoder_decoder_ipu_config_cuts_at_the_encoders_last_ipu():
    from ipu_tutorials.optimum.graphcore.modeling_utils import split_encoder_decoder_ipu_config

    config = IPUConfig(layers_per_ipu=[3, 0, 3, 0, 0, 7], matmul_proportion=[0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    encoder, decoder = split_encoder_decoder_ipu_config(config, 6, 7)
    assert (encoder.layers_per_ipu, encoder.ipus_per_replica) == ([3, 0, 3, 0], 4)  # largest power of 2
    assert (decoder.layers_per_ipu, decoder.matmul_proportion) == ([0, 7], [0.5, 0.6])
    with pytest.raises(IncompatibleIPUConfigError, match="Unable to find a valid split"):
        split_encoder_decoder_ipu_config(IPUConfig(layers_per_ipu=[4, 3]), 3, 4)
    with pytest.raises(ValueError, match="SplitProjection` must have all splits placed on the decoder"):
        split_encoder_decoder_ipu_config(
            IPUConfig(layers_per_ipu=[0, 2, 2, 0], serialized_projection_splits_per_ipu=[0, 2, 2, 0]), 2, 2)


def test_the_registry_knows_nothing_of_the_models():
    """Registration goes one way: models import modeling_utils, never the reverse (no import circle)."""
    import ast
    import inspect

    from ipu_tutorials.optimum.graphcore import modeling_utils
    from ipu_tutorials.optimum.graphcore.models import PipelinedBertModel

    tree = ast.parse(inspect.getsource(modeling_utils))
    imported = {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for a in node.names}
    assert not [name for name in imported if "models" in name]
    import transformers
    assert modeling_utils._PRETRAINED_TO_PIPELINED_REGISTRY[transformers.BertModel] is PipelinedBertModel
