"""optimum-graphcore on simulated IPUs: replace `optimum.graphcore` by `ipu_tutorials.optimum.graphcore`.

`transformers` is optional (`pip install -e ".[huggingface]"`): IPUConfig, get_layer_ipu and the
serialized layers work without it. With it, importing this package also imports the trainer and
`models`, whose pipelined classes register themselves with modeling_utils (the registry knows
nothing of them), as optimum-graphcore does.
"""
import importlib.util

from ._config_fields import ALLOWED_POD_TYPES, IncompatibleIPUConfigError
from .ipu_configuration import CONFIG_NAME, IPUConfig
from .modeling_utils import (PipelineMixin, SerializedEmbedding, SerializedLinear, SplitProjection,
                             get_layer_ipu, recomputation_checkpoint, register,
                             split_encoder_decoder_ipu_config, to_pipelined)

__all__ = [
    "ALLOWED_POD_TYPES", "CONFIG_NAME", "IPUConfig", "IncompatibleIPUConfigError", "PipelineMixin",
    "SerializedEmbedding", "SerializedLinear", "SplitProjection", "get_layer_ipu",
    "recomputation_checkpoint", "register", "split_encoder_decoder_ipu_config", "to_pipelined",
]

if importlib.util.find_spec("transformers") is not None:
    from .models import *  # noqa: F401,F403  (the pipelined classes register themselves)
    from .models import __all__ as _model_classes
    from .trainer import IPUTrainer
    from .trainer_checkpoints import IPUTrainerState
    from .trainer_seq2seq import IPUSeq2SeqTrainer
    from .training_args import IPUTrainingArguments
    from .training_args_seq2seq import IPUSeq2SeqTrainingArguments

    __all__ += ["IPUSeq2SeqTrainer", "IPUSeq2SeqTrainingArguments", "IPUTrainer", "IPUTrainerState",
                "IPUTrainingArguments", *_model_classes]
