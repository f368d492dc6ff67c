"""BERT on IPUs: embeddings on IPU 0, encoder layers by layers_per_ipu, heads where optimum put them."""
from __future__ import annotations

from transformers import (BertForMaskedLM, BertForMultipleChoice, BertForPreTraining,
                          BertForQuestionAnswering, BertForSequenceClassification,
                          BertForTokenClassification, BertModel)

from .... import poptorch
from ..modeling_utils import PipelineMixin, register
from ._placement import (begin, last_ipu, place_layers, refuse_tied_serialization,
                         serialize_embedding, unserialize_embedding)


def _place_bert(model, bert) -> None:
    """The part every BERT shares: "Embedding" on IPU 0, then "Encoder{i}" blocks."""
    serialize_embedding(model, bert.embeddings, "word_embeddings")
    begin(bert, "embeddings", "Embedding", 0)
    model.layer_ipu = place_layers(model, bert.encoder.layer, "Encoder", checkpoint_last=False)


class _BertWithHead(PipelineMixin):
    """BERT with a task head on the last IPU (optimum-graphcore's BertPipelineMixin)."""

    HEAD = "classifier"
    HEAD_BLOCK = "Classifier Output"

    def parallelize(self, **kwargs):
        super().parallelize()
        _place_bert(self, self.bert)
        begin(self, self.HEAD, self.HEAD_BLOCK, last_ipu(self))
        return self

    def deparallelize(self):
        super().deparallelize()
        unserialize_embedding(self.bert.embeddings, "word_embeddings")
        return self


@register(BertModel)
class PipelinedBertModel(BertModel, PipelineMixin):
    """BertModel: the pooler goes back to IPU 0."""

    def parallelize(self, **kwargs):
        super().parallelize()
        _place_bert(self, self)
        if self.pooler is not None:
            begin(self, "pooler", "Pooler", 0)
        return self

    def deparallelize(self):
        super().deparallelize()
        unserialize_embedding(self.embeddings, "word_embeddings")
        return self


@register(BertForPreTraining)
class PipelinedBertForPreTraining(BertForPreTraining, PipelineMixin):
    """Pre-training heads on IPU 0, beside the word embedding they share a weight with."""

    def parallelize(self, **kwargs):
        super().parallelize()
        refuse_tied_serialization(self)
        _place_bert(self, self.bert)
        begin(self.bert, "pooler", "Pooler", 0)
        begin(self, "cls", "Classifier", 0)
        return self

    def forward(self, *args, **kwargs):
        """BertForPreTraining's forward, its two losses' sum marked as the one final loss.

        optimum-graphcore wraps the sum in poptorch.identity_loss: PopTorch wants one loss.
        """
        output = super().forward(*args, **kwargs)
        if isinstance(output, dict) and output.get("loss") is not None:
            output["loss"] = poptorch.identity_loss(output["loss"], reduction="none")
        return output


@register(BertForMaskedLM)
class PipelinedBertForMaskedLM(BertForMaskedLM, PipelineMixin):
    """The masked-LM head on IPU 0, beside the word embedding it shares a weight with."""

    def parallelize(self, **kwargs):
        super().parallelize()
        refuse_tied_serialization(self)
        _place_bert(self, self.bert)
        begin(self, "cls", "Classifier", 0)
        return self


@register(BertForSequenceClassification)
class PipelinedBertForSequenceClassification(BertForSequenceClassification, _BertWithHead):
    """The pooler rides with the last encoder layer; the classifier is on the last IPU."""


@register(BertForTokenClassification)
class PipelinedBertForTokenClassification(BertForTokenClassification, _BertWithHead):
    """The token classifier on the last IPU."""


@register(BertForMultipleChoice)
class PipelinedBertForMultipleChoice(BertForMultipleChoice, _BertWithHead):
    """The choice classifier on the last IPU."""


@register(BertForQuestionAnswering)
class PipelinedBertForQuestionAnswering(BertForQuestionAnswering, _BertWithHead):
    """The span head on the last IPU."""

    HEAD = "qa_outputs"
    HEAD_BLOCK = "QA Outputs"
