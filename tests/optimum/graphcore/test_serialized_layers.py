"""SerializedEmbedding, SerializedLinear and SplitProjection: the same numbers as the layers they slice."""
import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.optimum.graphcore.modeling_utils import (SerializedEmbedding, SerializedLinear,
                                                            SplitProjection)

MODES = poptorch.MatMulSerializationMode


def test_serialized_embedding_equals_the_embedding_and_keeps_padding():
    torch.manual_seed(0)
    embedding = torch.nn.Embedding(64, 8, padding_idx=63)
    serialized = SerializedEmbedding.from_model(embedding, 4)
    ids = torch.randint(0, 64, (4, 16))
    torch.testing.assert_close(serialized(ids), embedding(ids), rtol=0, atol=1e-6)
    assert [e.padding_idx for e in serialized.split_embeddings] == [None, None, None, 15]
    assert (SerializedEmbedding.from_model(torch.nn.Embedding(64, 8, padding_idx=0), 4)
            .split_embeddings[0].padding_idx == 0)
    back = serialized.to_model()
    assert back.padding_idx == 63 and torch.equal(back.weight, embedding.weight)


def test_serialized_splits_begin_one_block_per_ipu():
    serialized = SerializedEmbedding.from_model(torch.nn.Embedding(64, 8), 4).parallelize([3, 1])
    blocks = [[repr(h) for h in e._forward_pre_hooks.values()] for e in serialized.split_embeddings]
    assert [len(b) for b in blocks] == [1, 0, 0, 1]  # splits 0-2 on IPU 0, split 3 on IPU 1
    assert "Embedding-0-2" in blocks[0][0] and "Embedding-3" in blocks[3][0]
    with pytest.raises(ValueError, match=r"splits_per_ipu=\[2, 1\] places 3 splits but the layer has 4"):
        SerializedEmbedding.from_model(torch.nn.Embedding(64, 8), 4).parallelize([2, 1])


@pytest.mark.parametrize("mode", [MODES.OutputChannels, MODES.ReducingDim])
def test_split_projection_equals_the_linear_layer(mode):
    torch.manual_seed(0)
    linear = torch.nn.Linear(32, 8)
    split = SplitProjection.from_model(linear, 4, mode)
    x = torch.randn(5, 32)
    torch.testing.assert_close(split(x), linear(x), rtol=1e-5, atol=1e-5)
    back = split.to_model()
    assert torch.equal(back.weight, linear.weight) and torch.equal(back.bias, linear.bias)


def test_split_projection_errors():
    with pytest.raises(ValueError, match=r"linear.out_features=8 must be divisible by serialization_factor=3"):
        SplitProjection(torch.nn.Linear(32, 8), 3)
    with pytest.raises(ValueError, match="can only be"):
        SplitProjection(torch.nn.Linear(32, 8), 2, MODES.InputChannels)


def test_serialized_linear_equals_the_linear_layer_and_converts_back():
    torch.manual_seed(0)
    linear = torch.nn.Linear(32, 8)
    serialized = SerializedLinear.from_model(linear, 4)
    x = torch.randn(5, 32)
    torch.testing.assert_close(serialized(x), linear(x), rtol=1e-5, atol=1e-5)
    back = serialized.to_model()
    assert type(back) is torch.nn.Linear and torch.equal(back.weight, linear.weight)
    assert hasattr(serialized, "factor")  # to_model leaves the serialized layer intact
