"""A compiled model's inputs: the same structure, dtypes, shapes and constant values, or an
error naming the first argument that differs."""
import pytest
import torch

from ipu_tutorials.errors import Error
from ipu_tutorials.poptorch._input_signature import check_inputs, positional_names


class Model(torch.nn.Module):
    def forward(self, x, y, scale=1.0):
        return x * y * scale


def call(*args, **kwargs):
    return args, kwargs


COMPILED = call(torch.ones(2, 3), [torch.ones(1), torch.ones(1)], scale=2.0)


def test_inputs_like_the_compiled_ones_pass():
    check_inputs(Model(), COMPILED, call(torch.zeros(2, 3), [torch.zeros(1)] * 2, scale=2.0))


@pytest.mark.parametrize("given, message", [
    (call(torch.ones(2, 3)), r"Number of positional arguments mismatch: expected 2 arguments "
                             r"but got 1"),
    (call(torch.ones(2, 4), [torch.ones(1)] * 2, scale=2.0),
     r"Shape mismatch for x: expected torch.Size\(\[2, 3\]\) but got torch.Size\(\[2, 4\]\)"),
    (call(torch.ones(2, 3).half(), [torch.ones(1)] * 2, scale=2.0),
     r"Data type mismatch for x: expected torch.float32 but got torch.float16"),
    (call(torch.ones(2, 3), [torch.ones(1)], scale=2.0),
     r"Length mismatch for y: expected 2 elements but got 1"),
    (call(torch.ones(2, 3), [torch.ones(1), torch.ones(2)], scale=2.0),
     r"Shape mismatch for y\[1\]"),
    (call(torch.ones(2, 3), [torch.ones(1)] * 2, scale=3.0),
     r"Value mismatch for scale: expected 2.0 but got 3.0"),
    (call(torch.ones(2, 3), [torch.ones(1)] * 2, scale=2),
     r"Type mismatch for scale: expected <class 'float'> but got <class 'int'>"),
    (call(torch.ones(2, 3), [torch.ones(1)] * 2, other=2.0),
     r"Keys mismatch for named arguments: Unexpected arguments: other. Missing arguments: scale"),
])
def test_the_first_difference_is_named_with_how_to_recompile(given, message):
    with pytest.raises(Error, match=message + r".*\nThis error occurred because .* call destroy\(\)"):
        check_inputs(Model(), COMPILED, given)


def test_positional_names_come_from_forward_then_by_index():
    assert positional_names(Model(), 4) == ["x", "y", "scale", "args[3]"]
