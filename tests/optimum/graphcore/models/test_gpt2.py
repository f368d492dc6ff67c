"""gpt2.py: pipelined GPT-2 places its embeddings, layers and heads by layers_per_ipu."""
import pytest

from ipu_tutorials import poptorch
from ipu_tutorials.optimum.graphcore import IPUConfig
from ipu_tutorials.optimum.graphcore.modeling_utils import to_pipelined
from tests.optimum.graphcore.models.test_bert import MB, T, batch

transformers = pytest.importorskip("transformers")


def test_gpt2_places_embeddings_layers_and_head():
    config = transformers.GPT2Config(vocab_size=96, n_embd=32, n_layer=4, n_head=2, n_positions=16,
                                     num_labels=2, pad_token_id=0, resid_pdrop=0.0,
                                     embd_pdrop=0.0, attn_pdrop=0.0)
    ipu_config = IPUConfig(layers_per_ipu=[1, 3], gradient_accumulation_steps=16)
    model = to_pipelined(transformers.GPT2ForSequenceClassification(config), ipu_config).parallelize()
    training = poptorch.trainingModel(model, ipu_config.to_options())
    data = batch(16 * MB, seed=3)
    training.compile(input_ids=data["input_ids"], labels=data["labels"] % 2)
    block_ipu = training.plan.placement.block_ipu
    assert block_ipu["Token embedding"] == 0 and block_ipu["Score"] == 1
    assert [block_ipu[f"Layer{i}"] for i in range(4)] == [0, 1, 1, 1]
    lm = to_pipelined(transformers.GPT2LMHeadModel(config), ipu_config).parallelize()
    inference = poptorch.inferenceModel(lm.eval(), ipu_config.to_options(for_inference=True))
    logits = inference(input_ids=data["input_ids"][:MB]).logits
    assert logits.shape == (MB, T, 96)
    assert inference.plan.placement.block_ipu["LM head"] == 0
