"""optimum-graphcore on simulated IPUs: replace `optimum.graphcore` by `ipu_tutorials.optimum.graphcore`.

`transformers` is optional (`pip install -e ".[huggingface]"`): IPUConfig, get_layer_ipu and the
serialized layers work without it. With it, importing this package also imports the trainer and
`models`, whose pipelined classes register themselves with modeling_utils (the registry knows
nothing of them), as optimum-graphcore does. The package's names are optimum-graphcore's
(tests/peer/manifests/optimum-graphcore-v0.7.1.json and the older releases beside it).
"""
import importlib.util

from .ipu_configuration import IPUConfig

# The package exports what optimum-graphcore's own `optimum/graphcore/__init__.py` exports (no
# release, v0.1.0 to v0.7.1, exports get_layer_ipu, to_pipelined, the serialized layers or
# IncompatibleIPUConfigError): import those from modeling_utils and ipu_configuration, as there.
__all__ = ["IPUConfig"]

if importlib.util.find_spec("transformers") is not None:
    from . import models as _models
    from .trainer import IPUTrainer
    from .trainer_checkpoints import IPUTrainerState
    from .trainer_seq2seq import IPUSeq2SeqTrainer
    from .training_args import IPUTrainingArguments
    from .training_args_seq2seq import IPUSeq2SeqTrainingArguments

    # the pipelined classes optimum-graphcore exports (its PipelinedGPT2Model and
    # PipelinedViTModel, which it does not have, stay in `models`)
    _EXPORTED_MODELS = [n for n in _models.__all__ if n not in ("PipelinedGPT2Model",
                                                                 "PipelinedViTModel")]
    globals().update({name: getattr(_models, name) for name in _EXPORTED_MODELS})
    __all__ += ["IPUSeq2SeqTrainer", "IPUSeq2SeqTrainingArguments", "IPUTrainer", "IPUTrainerState",
                "IPUTrainingArguments", *_EXPORTED_MODELS]

# optimum-graphcore has no serialized_layers, trainer_checkpoints ... modules: the facade's own
# are imported by their full path, never read as names of the package.
for _module in ("published", "serialized_layers", "trainer_checkpoints", "trainer_evaluation",
                "trainer_loop"):
    globals().pop(_module, None)
del _module
