"""optimum-graphcore on simulated IPUs: replace `optimum.graphcore` by `ipu_tutorials.optimum.graphcore`.

`transformers` is optional (`pip install -e ".[huggingface]"`): IPUConfig, get_layer_ipu and the
serialized layers work without it. With it, importing this package also imports the trainer and
`models`, whose pipelined classes register themselves with modeling_utils (the registry knows
nothing of them), as optimum-graphcore does.
"""
import importlib.util

from .ipu_configuration import IPUConfig

# The package exports what optimum-graphcore's own `optimum/graphcore/__init__.py` exports (no
# release, v0.1.0 to v0.7.1, exports get_layer_ipu, to_pipelined, the serialized layers or
# IncompatibleIPUConfigError): import those from modeling_utils and ipu_configuration, as there.
__all__ = ["IPUConfig"]

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
