"""trainingModel, inferenceModel and load: wrapping a module, once, and rebuilding it from a file."""
import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.tutorial.models import Regression


def test_wrapping_a_model_twice_for_training():
    model = Regression()
    first = poptorch.trainingModel(model)
    with pytest.raises(RuntimeError, match=r"already wrapped.*destroy\(\)"):
        poptorch.trainingModel(model)
    first.destroy()
    poptorch.trainingModel(model)


def test_save_and_load_rebuild_a_compiled_model(options, tmp_path):
    net = Regression()
    model = poptorch.trainingModel(net, options(a=2))
    x, y = torch.randn(8, 5), torch.randn(8, 3)
    model(x, y)
    model.save(str(tmp_path / "model.poptorch"))
    model.destroy()
    loaded = poptorch.load(str(tmp_path / "model.poptorch"))
    assert loaded.isCompiled()
    torch.testing.assert_close(loaded.model.fc.weight, net.fc.weight)
    assert loaded.options.Training.gradient_accumulation == 2


def test_wrapping_something_that_is_not_a_module():
    # was wrong: wrapping a function failed later with an unrelated AttributeError.
    with pytest.raises(TypeError, match="expected a torch.nn.Module to wrap, got function"):
        poptorch.trainingModel(lambda x: x)
