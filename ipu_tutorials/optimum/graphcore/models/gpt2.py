"""GPT-2 on IPUs: token and position embeddings on IPU 0, "Layer{i}" blocks by layers_per_ipu."""
from __future__ import annotations

from transformers import (GPT2ForSequenceClassification, GPT2ForTokenClassification,
                          GPT2LMHeadModel, GPT2Model)

from ..modeling_utils import PipelineMixin, register
from ._placement import (begin, last_ipu, place_layers, refuse_tied_serialization,
                         serialize_embedding, unserialize_embedding)


def _place_gpt2(model, transformer) -> None:
    serialize_embedding(model, transformer, "wte")
    begin(transformer, "wte", "Token embedding", 0)
    begin(transformer, "wpe", "Position embedding", 0)
    model.layer_ipu = place_layers(model, transformer.h, "Layer", checkpoint_last=False)


class _GPT2WithHead(PipelineMixin):
    """GPT-2 with a task head on the last IPU (optimum-graphcore's GPT2PipelineMixin)."""

    HEAD = "classifier"
    HEAD_BLOCK = "Classifier"

    def parallelize(self, **kwargs):
        super().parallelize()
        _place_gpt2(self, self.transformer)
        begin(self, self.HEAD, self.HEAD_BLOCK, last_ipu(self))
        return self

    def deparallelize(self):
        super().deparallelize()
        unserialize_embedding(self.transformer, "wte")
        return self


@register(GPT2Model)
class PipelinedGPT2Model(GPT2Model, PipelineMixin):
    """The final layer norm rides with the last layer."""

    def parallelize(self, **kwargs):
        super().parallelize()
        _place_gpt2(self, self)
        return self

    def deparallelize(self):
        super().deparallelize()
        unserialize_embedding(self, "wte")
        return self


@register(GPT2LMHeadModel)
class PipelinedGPT2LMHeadModel(GPT2LMHeadModel, PipelineMixin):
    """The LM head on IPU 0, beside the token embedding it shares a weight with."""

    def parallelize(self, **kwargs):
        super().parallelize()
        refuse_tied_serialization(self)
        _place_gpt2(self, self.transformer)
        begin(self, "lm_head", "LM head", 0)
        return self


@register(GPT2ForSequenceClassification)
class PipelinedGPT2ForSequenceClassification(GPT2ForSequenceClassification, _GPT2WithHead):
    """The score head on the last IPU."""

    HEAD = "score"
    HEAD_BLOCK = "Score"


@register(GPT2ForTokenClassification)
class PipelinedGPT2ForTokenClassification(GPT2ForTokenClassification, _GPT2WithHead):
    """The token classifier on the last IPU."""
