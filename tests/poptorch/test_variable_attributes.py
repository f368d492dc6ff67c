"""Which optimizer attributes may change after compile: PopTorch's VariableAttributes rules."""
import pytest

from ipu_tutorials import poptorch
from ipu_tutorials.poptorch._variable_attributes import (VariableAttributes, allowed_attributes,
                                                         explicit_arguments)


def test_only_named_and_allowed_attributes_change_state():
    attributes = VariableAttributes(["lr"], ["lr", "momentum"])
    assert not attributes.isConstant("lr") and attributes.isConstant("momentum")
    attributes.markAsVariable("momentum")
    assert not attributes.isConstant("momentum")
    attributes.markAsConstant("lr")
    assert attributes.isConstant("lr")
    with pytest.raises(AssertionError, match=r"Unknown attribute wibble, allowed values"):
        attributes.markAsConstant("wibble")


def test_the_arguments_given_a_value_are_variable():
    given = explicit_arguments(poptorch.optim.SGD, (), {"lr": 0.1, "momentum": None,
                                                        "loss_scaling": 2.0})
    assert given == ["lr", "loss_scaling"]


def test_a_subclass_keeps_its_bases_arguments():
    class Scaled(poptorch.optim.AdamW):
        def __init__(self, params, *args, **kwargs):
            super().__init__(params, *args, **kwargs)

    allowed = allowed_attributes(Scaled, poptorch.optim.__name__)
    assert {"lr", "betas", "loss_scaling", "accum_type"} <= set(allowed)
    assert poptorch.optim.VariableAttributes is VariableAttributes  # PopTorch's public name
