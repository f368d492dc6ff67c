"""Hugging Face models compile on the meta device with any attention implementation."""
import pytest
import torch

from ipu_tutorials import poptorch

transformers = pytest.importorskip("transformers")


class WithLoss(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, **inputs):
        out = self.model(**inputs)
        return out.logits, out.loss


def bert(implementation):
    config = transformers.BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=128, vocab_size=100)
    with torch.device("meta"):
        return transformers.BertForSequenceClassification._from_config(
            config, attn_implementation=implementation)


def inputs():
    return dict(input_ids=torch.zeros(2, 16, dtype=torch.long, device="meta"),
                attention_mask=torch.ones(2, 16, dtype=torch.long, device="meta"),
                labels=torch.zeros(2, dtype=torch.long, device="meta"))


def compiled(model):
    training = poptorch.trainingModel(WithLoss(model), poptorch.Options(),
                                      poptorch.optim.SGD(model.parameters(), lr=0.1))
    training.compile(**inputs())
    return training


@pytest.mark.parametrize("implementation", ["sdpa", "eager", "flex_attention"])
def test_a_masked_bert_compiles_on_meta_tensors(implementation):
    model = bert(implementation)
    plan = compiled(model)._plan
    assert plan.samples_per_second > 0
    assert model.config._attn_implementation == implementation  # put back after the capture


def test_every_implementation_does_the_same_matmuls():
    flops = {impl: sum(op.flops for op in compiled(bert(impl))._plan.graph.ops
                       if op.kind == "matmul")
             for impl in ("sdpa", "eager", "flex_attention")}
    assert len(set(flops.values())) == 1, flops


def test_the_capture_leaves_transformers_tracing_check_as_it_was():
    import transformers.masking_utils as masking
    before = masking.is_tracing
    compiled(bert("sdpa"))
    assert masking.is_tracing is before
