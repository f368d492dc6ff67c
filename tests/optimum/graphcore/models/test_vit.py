"""vit.py: pipelined ViT places its encoder layers by layers_per_ipu and its head last."""
import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.optimum.graphcore import IPUConfig
from ipu_tutorials.optimum.graphcore.modeling_utils import to_pipelined
from tests.optimum.graphcore.models.test_bert import MB

transformers = pytest.importorskip("transformers")


def test_vit_places_the_head_on_the_last_ipu():
    config = transformers.ViTConfig(image_size=16, patch_size=8, num_channels=3, hidden_size=32,
                                    num_hidden_layers=4, num_attention_heads=2,
                                    intermediate_size=64, num_labels=5)
    ipu_config = IPUConfig(layers_per_ipu=[-1, -1], gradient_accumulation_steps=16)
    model = to_pipelined(transformers.ViTForImageClassification(config), ipu_config).parallelize()
    training = poptorch.trainingModel(model, ipu_config.to_options())
    training.compile(pixel_values=torch.randn(16 * MB, 3, 16, 16),
                     labels=torch.randint(0, 5, (16 * MB,)))
    block_ipu = training.plan.placement.block_ipu
    assert [block_ipu[f"Encoder{i}"] for i in range(4)] == [0, 0, 1, 1]
    assert block_ipu["Embedding"] == 0 and block_ipu["Classifier"] == 1
