"""IPUConfig's table of attributes: types, floors, splits, values per POD type and values read
from update_from_string text, each rule with optimum-graphcore's message."""
import pytest

from ipu_tutorials.optimum.graphcore._config_fields import (parse_value, validate,
                                                            value_for_pod)


def test_valid_values_pass_and_pod_dicts_are_checked_value_by_value():
    validate("layers_per_ipu", [-1])
    validate("matmul_proportion", 0.6)  # a float or a list of floats
    validate("matmul_proportion", [0.2, 0.3])
    validate("device_iterations", {"default": 1, "pod16": 4})
    with pytest.raises(ValueError, match=r"`device_iterations` must be >= 1. You provided "
                                         r"device_iterations=0"):
        validate("device_iterations", {"default": 1, "pod64": 0})


@pytest.mark.parametrize("name, value, error, message", [
    ("replication_factor", "2", TypeError, r"replication_factor"),
    ("layers_per_ipu", [3, -2], ValueError, r"`layers_per_ipu` must have all elements >= -1"),
    ("output_mode", "every", ValueError, r"can only take values in all, sum, final, default"),
    ("serialized_embedding_splits_per_ipu", [0, 0], ValueError, r"must have atleast 1 split on 1 IPU"),
    ("serialized_embedding_splits_per_ipu", [0, 3, 0, 2], ValueError, r"on consecutive IPUs"),
    ("serialized_embedding_splits_per_ipu", [2, -1], ValueError, r"all elements >= 0"),
])
def test_each_rule_has_its_message(name, value, error, message):
    with pytest.raises(error, match=message):
        validate(name, value)


def test_values_per_pod_type():
    value = {"default": 1, "pod64": 8}
    assert value_for_pod("replication_factor", value, None) == 1
    assert value_for_pod("replication_factor", value, "pod64") == 8
    assert value_for_pod("replication_factor", 3, "pod16") == 3
    with pytest.raises(KeyError, match=r"does not contain a value for POD type pod16"):
        value_for_pod("replication_factor", value, "pod16")
    with pytest.raises(RuntimeError, match=r"No POD type was specified and no default value"):
        value_for_pod("replication_factor", {"pod64": 8}, None)


def test_text_values_by_the_attributes_type():
    assert parse_value("auto_loss_scaling", "Yes") is True
    assert parse_value("layers_per_ipu", "[1 2 3]") == [1, 2, 3]
    assert parse_value("seed", "None") is None
    assert parse_value("output_mode", "all") == "all"
    with pytest.raises(ValueError, match=r"Can't derive true or false from maybe"):
        parse_value("auto_loss_scaling", "maybe")
    with pytest.raises(ValueError, match=r"Can't read 'four' as a value of replication_factor"):
        parse_value("replication_factor", "four")
