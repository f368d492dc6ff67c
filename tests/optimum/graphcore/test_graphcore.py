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
