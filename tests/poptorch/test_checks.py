"""The facade's argument checks: each error names the argument, the rule and the value."""
import pytest

from ipu_tutorials.poptorch import OutputMode
from ipu_tutorials.poptorch._checks import (check_bool, check_enum, check_fraction, check_int,
                                            check_str)


def test_valid_values_come_back_unchanged():
    assert check_int("f()", 3) == 3 and check_int("f()", 0, minimum=0) == 0
    assert check_bool("f()", False) is False
    assert check_enum("f()", OutputMode.All, OutputMode) is OutputMode.All
    assert check_fraction("f()", 1) == 1.0 and isinstance(check_fraction("f()", 1), float)
    assert check_str("f()", "x") == "x"


@pytest.mark.parametrize("check, value, error, message", [
    (check_int, True, TypeError, r"f\(\) expects an integer, got bool True"),
    (check_int, 1.0, TypeError, r"f\(\) expects an integer, got float 1.0"),
    (check_int, 0, ValueError, r"f\(\) must be a positive integer, got 0"),
    (check_bool, 1, TypeError, r"f\(\) expects True or False, got int 1"),
    (check_fraction, 0.0, ValueError, r"f\(\) must be in \(0, 1\], got 0.0"),
    (check_fraction, 1.5, ValueError, r"must be in \(0, 1\], got 1.5"),
    (check_fraction, "0.5", TypeError, r"f\(\) expects a number between 0 and 1, got '0.5'"),
    (check_str, None, TypeError, r"f\(\) expects a string, got NoneType None"),
])
def test_each_rule_has_its_message(check, value, error, message):
    with pytest.raises(error, match=message):
        check("f()", value)


def test_a_minimum_other_than_one_is_named_and_enums_list_their_members():
    with pytest.raises(ValueError, match=r"f\(\) must be an integer >= 0, got -1"):
        check_int("f()", -1, minimum=0)
    with pytest.raises(TypeError, match=r"f\(\) expects one of OutputMode.Final, "
                                        r"OutputMode.EveryN, OutputMode.All, .*; got 'All'"):
        check_enum("f()", "All", OutputMode)
