"""bert.py: pipelined BERT placed by layers_per_ipu, training and inference equal to plain PyTorch."""
import copy

import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.optimum.graphcore import IPUConfig
from ipu_tutorials.optimum.graphcore.modeling_utils import (SerializedEmbedding, get_layer_ipu,
                                                            to_pipelined)

transformers = pytest.importorskip("transformers")

A, MB, T = 16, 2, 8  # gradient accumulation, micro-batch, sequence length


def tiny_bert(layers=6, **kwargs):
    config = transformers.BertConfig(vocab_size=96, hidden_size=32, num_hidden_layers=layers,
                                     num_attention_heads=2, intermediate_size=64,
                                     max_position_embeddings=16, num_labels=3,
                                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                                     **kwargs)
    return transformers.BertForSequenceClassification(config)


def batch(count, seed):
    generator = torch.Generator().manual_seed(seed)
    return {"input_ids": torch.randint(1, 96, (count, T), generator=generator),
            "attention_mask": torch.ones(count, T, dtype=torch.long),
            "labels": torch.randint(0, 3, (count,), generator=generator)}


def test_bert_pipelined_by_ipu_config_trains_like_plain_pytorch():
    model = tiny_bert()
    reference = copy.deepcopy(model)
    ipu_config = IPUConfig(layers_per_ipu=[1, 2, -1, 1], gradient_accumulation_steps=A,
                           output_mode="all")
    pipelined = to_pipelined(model, ipu_config).parallelize()
    training = poptorch.trainingModel(pipelined, ipu_config.to_options(),
                                      poptorch.optim.SGD(pipelined.parameters(), lr=0.05))
    optimizer = torch.optim.SGD(reference.parameters(), lr=0.05)
    for step in range(3):
        data = batch(A * MB, seed=step)
        losses = training(**data).loss
        optimizer.zero_grad()
        expected = []
        for j in range(A):
            micro = {k: v[j * MB:(j + 1) * MB] for k, v in data.items()}
            loss = reference(**micro).loss
            (loss / A).backward()
            expected.append(loss.detach())
        optimizer.step()
        assert torch.allclose(losses, torch.stack(expected), atol=1e-5, rtol=1e-5)
    for name, value in reference.state_dict().items():
        assert torch.allclose(pipelined.state_dict()[name], value, atol=1e-5, rtol=1e-5), name
    layer_ipu = get_layer_ipu(ipu_config, 6)
    assert layer_ipu == [0, 1, 1, 2, 2, 3]
    block_ipu = training.plan.placement.block_ipu
    assert [block_ipu[f"Encoder{i}"] for i in range(6)] == layer_ipu
    assert block_ipu["Embedding"] == 0 and block_ipu["Classifier Output"] == 3


def test_inference_is_sharded_over_the_inference_layers():
    ipu_config = IPUConfig(layers_per_ipu=[3, 3], inference_layers_per_ipu=[2, 2, 2],
                           inference_device_iterations=2)
    model = to_pipelined(tiny_bert(), ipu_config)
    ipu_config = model.ipu_config.eval()
    model.parallelize()
    inference = poptorch.inferenceModel(model.eval(), ipu_config.to_options(for_inference=True))
    data = batch(2 * MB, seed=0)
    logits = inference(input_ids=data["input_ids"], attention_mask=data["attention_mask"]).logits
    plan = inference.plan
    assert plan.config.strategy.kind == "sharded" and logits.shape == (2 * MB, 3)
    assert [plan.placement.block_ipu[f"Encoder{i}"] for i in range(6)] == [0, 0, 1, 1, 2, 2]


def test_recompute_checkpoints_and_serialized_embedding_follow_the_config():
    ipu_config = IPUConfig(layers_per_ipu=[2, 2, 2], recompute_checkpoint_every_layer=True,
                           embedding_serialization_factor=4, gradient_accumulation_steps=16)
    model = tiny_bert()
    pipelined = to_pipelined(model, ipu_config).parallelize()
    embedding = pipelined.bert.embeddings.word_embeddings
    assert isinstance(embedding, SerializedEmbedding) and embedding.serialization_factor == 4
    data = batch(MB, seed=1)
    with torch.no_grad():
        assert torch.allclose(pipelined(**data).logits, model(**data).logits, atol=1e-6)
    assert len(pipelined._hooks) == 5  # every encoder layer but the last
    graph = poptorch.trainingModel(pipelined, ipu_config.to_options())
    graph.compile(**batch(16 * MB, seed=2))
    assert sum(graph.plan.graph.checkpoint_bytes.values()) > 0
    pipelined.deparallelize()
    assert isinstance(pipelined.bert.embeddings.word_embeddings, torch.nn.Embedding)
    assert not any(m._forward_pre_hooks or m._forward_hooks for m in pipelined.modules())


def test_to_pipelined_keeps_the_weights_and_refuses_unknown_classes():
    model = tiny_bert()
    pipelined = to_pipelined(model, IPUConfig(layers_per_ipu=[3, 3]))
    assert type(pipelined).__name__ == "PipelinedBertForSequenceClassification"
    assert isinstance(pipelined, transformers.BertForSequenceClassification)
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), pipelined.parameters()))
    with pytest.raises(KeyError, match="Linear pipelined version not found in registry"):
        to_pipelined(torch.nn.Linear(2, 2), IPUConfig())
    forced = to_pipelined(torch.nn.Linear(2, 2), IPUConfig(), force=True)
    assert forced.parallelize() is forced
