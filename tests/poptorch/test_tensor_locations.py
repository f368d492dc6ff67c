"""tensor_locations.py: TensorLocationSettings and opts.TensorLocations, by PopTorch's names."""
import pytest

from ipu_tutorials import poptorch
from ipu_tutorials.poptorch import _to_simulator


def test_tensor_location_settings_chain_and_record():
    settings = (poptorch.TensorLocationSettings().useOnChipStorage(False)
                .useReplicatedTensorSharding(True).minElementsForOffChip(128)
                .minElementsForReplicatedTensorSharding(64).useIOTilesToLoad(True)
                .useIOTilesToStore(False))
    expected = {"onChip": 0, "useReplicatedTensorSharding": 1, "minElementsForOffChip": 128,
                "minElementsForReplicatedTensorSharding": 64, "useIOTilesToLoad": 1,
                "useIOTilesToStore": 0}
    assert settings.toDict() == expected
    assert repr(settings) == ("TensorLocationSettings(onChip=0, useReplicatedTensorSharding=1, "
                              "minElementsForOffChip=128, minElementsForReplicatedTensorSharding=64, "
                              "useIOTilesToLoad=1, useIOTilesToStore=0)")
    opts = poptorch.Options()
    opts.TensorLocations.setOptimizerLocation(settings)
    assert opts.TensorLocations.location_optimizer == expected  # PopTorch keeps the dict
    assert not hasattr(opts.TensorLocations, "location_weight")  # until it is set
    settings.useOnChipStorage(True)  # the options keep a copy, not the settings object
    assert opts.TensorLocations.location_optimizer["onChip"] == 0


@pytest.mark.parametrize("setter, bad, error, message", [
    # PopTorch asserts each type (python/options.py: TensorLocationSettings)
    ("useOnChipStorage", 1, AssertionError,
     r"useOnChipStorage\(\) expects True or False, got int 1"),
    ("useReplicatedTensorSharding", "yes", AssertionError,
     r"useReplicatedTensorSharding\(\) expects"),
    ("minElementsForOffChip", -1, ValueError,
     r"minElementsForOffChip\(\) must be an integer >= 0, got -1"),
    ("minElementsForReplicatedTensorSharding", 1.5, AssertionError,
     r"expects an integer, got float"),
    ("useIOTilesToLoad", None, AssertionError, r"useIOTilesToLoad\(\) expects True or False"),
    ("useIOTilesToStore", 0, AssertionError, r"useIOTilesToStore\(\) expects True or False"),
])
def test_tensor_location_settings_reject_bad_input(setter, bad, error, message):
    with pytest.raises(error, match=message):
        getattr(poptorch.TensorLocationSettings(), setter)(bad)


def test_each_tensor_kind_has_its_own_location():
    opts = poptorch.Options()
    off = poptorch.TensorLocationSettings().useOnChipStorage(False)
    on = poptorch.TensorLocationSettings().useOnChipStorage(True)
    opts.TensorLocations.setActivationLocation(off).setWeightLocation(on)
    opts.TensorLocations.setAccumulatorLocation(off)
    assert opts.TensorLocations.location_activation == {"onChip": 0}
    assert opts.TensorLocations.location_weight == {"onChip": 1}
    assert opts.TensorLocations.location_accumulator == {"onChip": 0}
    assert opts.TensorLocations._location("optimizer") == {}  # unset


def test_settings_read_back_as_declared_and_reach_the_spec_by_their_declarations():
    opts = poptorch.Options()
    opts.TensorLocations.setOptimizerLocation(poptorch.TensorLocationSettings()
                                              .useOnChipStorage(False).minElementsForOffChip(8))
    settings = opts.TensorLocations._settings("optimizer")
    # PopTorch keys them by their setters' names, so reading one gives the setter: the
    # simulator reads the values with _value
    assert (settings.onChip, settings._value("min_elements_for_off_chip")) == (0, 8)
    assert "useReplicatedTensorSharding" not in settings.toDict()  # unset: the simulator's default
    assert settings._spec_fields() == {"on_chip": False, "min_elements_off_chip": 8}
    locations = _to_simulator.locations(opts, phased=False)
    assert not locations["optimizer"].on_chip and locations["optimizer"].min_elements_off_chip == 8
    assert locations["weight"].on_chip  # unset: on chip, except under phased execution
    assert not _to_simulator.locations(opts, phased=True)["weight"].on_chip


def test_an_unknown_tensor_kind_names_the_kinds():
    with pytest.raises(ValueError, match=r"unknown tensor kind 'weights'; the kinds are activation, "
                                         r"weight, optimizer, accumulator"):
        poptorch.Options().TensorLocations._location("weights")
