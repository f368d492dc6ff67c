"""trainingModel, inferenceModel and load: wrapping a module, once, and rebuilding it from a file."""
import copy

import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.tutorial.models import Regression


def test_wrapping_a_model_twice_for_training():
    model = Regression()
    first = poptorch.trainingModel(model)
    with pytest.raises(RuntimeError, match=r"^Model has already been wrapped in "
                                           r"'poptorch.trainingModel'. Call model.destroy\(\) on "
                                           r"the model to unwrap before wrapping again.$"):
        poptorch.trainingModel(model)
    first.destroy()
    poptorch.trainingModel(model)


def test_a_wrapped_model_has_poptorchs_destroy_and_stays_its_own_class(tmp_path):
    # was wrong: only the wrapper had destroy(), so PopTorch's advice (and its
    # poplar_executor_test.py::test_rewrap_model) failed on the model
    model = Regression()
    text = repr(model)
    training = poptorch.trainingModel(model)
    assert isinstance(model, Regression) and repr(model) == text
    assert type(copy.deepcopy(model)) is Regression  # copies and pickles are the plain class
    torch.save(model, tmp_path / "model.pt")
    assert type(torch.load(tmp_path / "model.pt", weights_only=False)) is Regression
    model.destroy()
    assert type(model) is Regression and not training.isCompiled()
    assert not hasattr(model, "destroy")
    again = poptorch.trainingModel(model)
    x, y = torch.randn(4, 5), torch.randn(4, 3)
    again(x, y)
    model.destroy()
    poptorch.trainingModel(again)(x, y)  # a destroyed wrapper wraps its model again


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
