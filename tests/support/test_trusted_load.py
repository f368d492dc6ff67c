"""trusted_load.py: weights-only loads that allow only plain data and already-imported classes."""
import collections

import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.support.atomic_io import FileFormatError
from ipu_tutorials.support.trusted_load import allowed, load_trusted


def test_only_imported_modules_and_safe_kinds_of_class_are_allowed():
    assert allowed("torch.nn.modules.linear.Linear") is torch.nn.Linear
    assert allowed("ipu_tutorials.poptorch.options.Options") is poptorch.Options
    assert allowed("collections.OrderedDict") is not None
    assert allowed("posix.system") is None and allowed("builtins.eval") is None
    assert allowed("ipu_tutorials.poptorch.executor.PoplarExecutor") is None  # not plain data
    assert allowed("never_imported_module.Model") is None  # naming it must not import it
    assert allowed("torch.nn.Linear.__init__") is None


def test_a_module_and_its_options_load_back_with_their_values(tmp_path):
    model = torch.nn.Linear(3, 2)
    path = tmp_path / "saved.pt"
    torch.save({"model": model, "options": poptorch.Options().deviceIterations(4),
                "order": collections.OrderedDict(a=1)}, path)
    loaded = load_trusted(path)
    assert torch.equal(loaded["model"].weight, model.weight)
    assert loaded["options"].device_iterations == 4 and loaded["order"] == {"a": 1}


def test_a_poptorch_optimizer_loads_back_with_its_variable_attributes(tmp_path):
    # was refused: VariableAttributes lives in poptorch/_variable_attributes.py, re-exported
    # by poptorch.optim; both names (files saved before and after the move) are allowed
    model = torch.nn.Linear(3, 2)
    optimizer = poptorch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    torch.save({"optimizer": optimizer}, tmp_path / "saved.pt")
    loaded = load_trusted(tmp_path / "saved.pt")["optimizer"]
    assert isinstance(loaded.variable_attrs, poptorch.optim.VariableAttributes)
    assert (allowed("ipu_tutorials.poptorch.optim.VariableAttributes") is
            poptorch.optim.VariableAttributes)
    assert (allowed("ipu_tutorials.poptorch._variable_attributes.VariableAttributes") is
            poptorch.optim.VariableAttributes)


def test_an_empty_or_damaged_file_is_one_error_naming_it(tmp_path):
    (tmp_path / "empty.pt").write_bytes(b"")
    with pytest.raises(FileFormatError, match=r"empty.pt is empty; expected a checkpoint"):
        load_trusted(tmp_path / "empty.pt", "checkpoint")
    (tmp_path / "cut.pt").write_bytes(b"PK\x03\x04 not a zip")
    with pytest.raises(FileFormatError, match=r"cut.pt is not a readable checkpoint: it is "
                                              r"truncated, damaged or unsafe"):
        load_trusted(tmp_path / "cut.pt", "checkpoint")
    with pytest.raises(FileNotFoundError):
        load_trusted(tmp_path / "missing.pt")


def test_a_class_saved_under_its_old_module_loads_under_the_name_the_file_gives(tmp_path,
                                                                                 monkeypatch):
    # was wrong: a file saved when _TensorLocationOptions lived in option_groups was refused
    from ipu_tutorials.poptorch.tensor_locations import _TensorLocationOptions

    opts = poptorch.Options()
    opts.TensorLocations.setWeightLocation(poptorch.TensorLocationSettings().useOnChipStorage(False))
    monkeypatch.setattr(_TensorLocationOptions, "__module__", "ipu_tutorials.poptorch.option_groups")
    torch.save(opts, tmp_path / "o.pt")
    monkeypatch.undo()
    assert ("ipu_tutorials.poptorch.option_groups._TensorLocationOptions" in
            torch.serialization.get_unsafe_globals_in_checkpoint(str(tmp_path / "o.pt")))
    loaded = load_trusted(tmp_path / "o.pt")
    assert loaded.TensorLocations.location_weight == {"onChip": 0}
