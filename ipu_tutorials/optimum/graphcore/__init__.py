"""optimum-graphcore on simulated IPUs: replace `optimum.graphcore` by `ipu_tutorials.optimum.graphcore`.

`transformers` is optional (`pip install -e ".[huggingface]"`): IPUConfig and get_layer_ipu work
without it. With it, importing this package imports `models`, whose pipelined classes register
themselves with modeling_utils (the registry knows nothing of them), as optimum-graphcore does.
"""
import importlib.util

from ._config_fields import ALLOWED_POD_TYPES, IncompatibleIPUConfigError
from .ipu_configuration import CONFIG_NAME, IPUConfig
from .modeling_utils import (PipelineMixin, SerializedEmbedding, SerializedLinear, SplitProjection,
                             get_layer_ipu, recomputation_checkpoint, register,
                             split_encoder_decoder_ipu_config, to_pipelined)
from .trainer import IPUTrainer
from .training_args import IPUTrainingArguments

if importlib.util.find_spec("transformers") is not None:
    from . import models  # noqa: F401  (the pipelined classes register themselves)

_MODEL_CLASSES = (
    "PipelinedBertModel", "PipelinedBertForSequenceClassification", "PipelinedBertForPreTraining",
    "PipelinedBertForMaskedLM", "PipelinedBertForTokenClassification",
    "PipelinedBertForQuestionAnswering", "PipelinedBertForMultipleChoice",
    "PipelinedGPT2Model", "PipelinedGPT2LMHeadModel", "PipelinedGPT2ForSequenceClassification",
    "PipelinedGPT2ForTokenClassification", "PipelinedViTModel", "PipelinedViTForImageClassification",
)


def __getattr__(name: str):
    """The Pipelined* classes import transformers, so they load only when asked for."""
    if name in _MODEL_CLASSES:
        from . import models
        return getattr(models, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ALLOWED_POD_TYPES", "CONFIG_NAME", "IPUConfig", "IPUTrainer", "IPUTrainingArguments",
    "IncompatibleIPUConfigError", "PipelineMixin", "SerializedEmbedding", "SerializedLinear",
    "SplitProjection", "get_layer_ipu", "recomputation_checkpoint", "register",
    "split_encoder_decoder_ipu_config", "to_pipelined", *_MODEL_CLASSES,
]
