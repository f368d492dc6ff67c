"""The package's own behaviour: the Pipelined* classes, which need transformers, load only
when asked for; other names answer as a module does."""
import subprocess
import sys

import pytest


def test_importing_the_package_with_transformers_exports_the_trainer_and_models():
    pytest.importorskip("transformers")
    code = ("import ipu_tutorials.optimum.graphcore as g; "
            "print(g.IPUConfig.__name__, g.IPUTrainer.__name__, g.PipelinedBertModel.__name__)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=300, check=True)
    assert result.stdout.split() == ["IPUConfig", "IPUTrainer", "PipelinedBertModel"]


def test_a_pipelined_class_loads_on_first_use_and_unknown_names_raise():
    pytest.importorskip("transformers")
    from ipu_tutorials.optimum import graphcore
    from ipu_tutorials.optimum.graphcore.models import PipelinedBertModel

    assert graphcore.PipelinedBertModel is PipelinedBertModel
    with pytest.raises(AttributeError, match=r"has no attribute 'PipelinedNothing'"):
        graphcore.PipelinedNothing


def test_the_package_exports_only_what_an_optimum_graphcore_release_exports():
    # was wrong: get_layer_ipu, to_pipelined and modeling_utils' other names were exported at the
    # top level, where no release (v0.1.0 to v0.7.1, optimum/graphcore/__init__.py) puts them
    pytest.importorskip("transformers")
    from ipu_tutorials.optimum import graphcore
    from ipu_tutorials.optimum.graphcore import modeling_utils

    for name in ("get_layer_ipu", "to_pipelined", "SerializedEmbedding", "PipelineMixin",
                 "recomputation_checkpoint", "IncompatibleIPUConfigError", "ALLOWED_POD_TYPES"):
        assert name not in graphcore.__all__
    assert {"IPUConfig", "IPUTrainer", "IPUTrainerState", "IPUTrainingArguments",
            "IPUSeq2SeqTrainer", "IPUSeq2SeqTrainingArguments"} <= set(graphcore.__all__)
    assert callable(modeling_utils.get_layer_ipu) and callable(modeling_utils.to_pipelined)
