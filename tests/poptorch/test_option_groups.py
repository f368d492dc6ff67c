"""The option groups (Training, Precision, Distributed, Jit, _Popart): their declarations,
freezing and copies."""
import copy

import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.errors import Error


def test_popart_set_records_any_name_and_a_copy_keeps_it():
    # was wrong: an unknown name was refused when set, so PopTorch's test_copying_options (which
    # sets "dummyKey" and never compiles) failed; PopART refuses it when the model compiles
    opts = poptorch.Options()
    opts._Popart.set("dummyKey", 5)
    assert copy.deepcopy(opts)._Popart.options == {"dummyKey": 5}  # PopTorch's name for them


def test_every_setter_stores_under_a_name_of_its_groups_table():
    """A typo inside a setter would be a new option; _set refuses names nothing declares."""
    for group in (poptorch.Options(), poptorch.Options().Training, poptorch.TensorLocationSettings(),
                  poptorch.Options().TensorLocations):
        with pytest.raises(ValueError, match=r"unknown option 'typo' for \w+; valid names: "):
            group._set(typo=1)


def test_tensor_location_settings_and_locations_keep_their_names():
    settings = poptorch.TensorLocationSettings().useOnChipStorage(False).minElementsForOffChip(8)
    opts = poptorch.Options()
    opts.TensorLocations.setOptimizerLocation(settings)
    assert opts.TensorLocations.location_optimizer == {"onChip": 0, "minElementsForOffChip": 8}
    assert opts.TensorLocations.toDict() == {"location_optimizer": {"onChip": 0,
                                                                    "minElementsForOffChip": 8}}


def test_a_frozen_group_refuses_changes_and_its_deep_copy_does_not():
    training = poptorch.Options().Training
    training._freeze()
    with pytest.raises(AttributeError, match=r"Can't modify frozen Options "
                                             r"\('gradient_accumulation'\): .* Call "
                                             r"options.clone\(\)"):
        training.gradientAccumulation(2)
    thawed = copy.deepcopy(training).gradientAccumulation(2)
    assert thawed.gradient_accumulation == 2 and training.gradient_accumulation == 1


def test_only_options_poptorch_keeps_are_assigned_or_read():
    precision = poptorch.Options().Precision  # PopTorch sends all of these to PopART
    with pytest.raises(AssertionError, match=r"Invalid option partials_type, valid options "
                                             r"are \[\]"):
        precision.partials_type = torch.half
    with pytest.raises(AttributeError, match=r"_PrecisionOptions has no option 'partials_type'; "
                                             r"its options are: $"):
        precision.partials_type
    training = poptorch.Options().Training
    with pytest.raises(AttributeError, match=r"_TrainingOptions has no option 'accumulation'; "
                                             r"its options are: "
                                             r"accumulation_and_replication_reduction_type"):
        training.accumulation


def test_a_group_may_become_a_subclass_of_itself_and_nothing_else():
    from ipu_tutorials.poptorch.option_groups import _DistributedOptions

    class Wrapped(_DistributedOptions):  # what popdist does to opts.Distributed
        pass

    opts = poptorch.Options()
    opts.Distributed.__class__ = Wrapped
    assert isinstance(opts.Distributed, Wrapped) and opts.Distributed.num_distributed_processes == 1
    with pytest.raises(AttributeError, match=r"_TrainingOptions has no attribute '__class__' "
                                             r"to set"):
        opts.Training.__class__ = Wrapped


def test_distributed_reads_named_environment_variables_and_can_be_disabled(monkeypatch):
    monkeypatch.setenv("MY_WORLD", "4")
    monkeypatch.setenv("MY_RANK", "3")
    opts = poptorch.Options()
    opts.Distributed.setEnvVarNames("MY_WORLD", "MY_RANK")
    assert (opts.Distributed.processId, opts.Distributed.numProcesses) == (3, 4)
    opts.Distributed.disable()
    assert (opts.Distributed.processId, opts.Distributed.numProcesses) == (0, 1)
    monkeypatch.delenv("MY_WORLD")
    monkeypatch.delenv("MY_RANK")
    opts.Distributed.setEnvVarNames("MY_WORLD", "MY_RANK")  # absent: one process
    assert (opts.Distributed.processId, opts.Distributed.numProcesses) == (0, 1)
