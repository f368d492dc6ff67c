"""Pipelined versions of Hugging Face transformers models (imports transformers)."""
from .bert import (PipelinedBertForMaskedLM, PipelinedBertForMultipleChoice,
                   PipelinedBertForPreTraining, PipelinedBertForQuestionAnswering,
                   PipelinedBertForSequenceClassification, PipelinedBertForTokenClassification,
                   PipelinedBertModel)
from .gpt2 import (PipelinedGPT2ForSequenceClassification, PipelinedGPT2ForTokenClassification,
                   PipelinedGPT2LMHeadModel, PipelinedGPT2Model)
from .vit import PipelinedViTForImageClassification, PipelinedViTModel

__all__ = [
    "PipelinedBertForMaskedLM", "PipelinedBertForMultipleChoice", "PipelinedBertForPreTraining",
    "PipelinedBertForQuestionAnswering", "PipelinedBertForSequenceClassification",
    "PipelinedBertForTokenClassification", "PipelinedBertModel",
    "PipelinedGPT2ForSequenceClassification", "PipelinedGPT2ForTokenClassification",
    "PipelinedGPT2LMHeadModel", "PipelinedGPT2Model",
    "PipelinedViTForImageClassification", "PipelinedViTModel",
]
