"""A compiled model's inputs: the same structure, dtypes, shapes and constant values, or an
error naming the first argument that differs."""
import pytest
import torch

from ipu_tutorials.errors import Error
from ipu_tutorials.poptorch._input_signature import bind, check_inputs, check_not_zero_sized


class Model(torch.nn.Module):
    def forward(self, x, y, scale=1.0):
        return x * y * scale


def call(*args, **kwargs):
    return args, kwargs


COMPILED = call(torch.ones(2, 3), [torch.ones(1), torch.ones(1)], scale=2.0)


def test_inputs_like_the_compiled_ones_pass():
    check_inputs(Model(), COMPILED, call(torch.zeros(2, 3), [torch.zeros(1)] * 2, scale=2.0))


@pytest.mark.parametrize("given, message", [
    (call(torch.ones(2, 3), [torch.ones(1)] * 2, 2.0, 5), r"Too many arguments provided: "
                                                          r"expected \['x', 'y', 'scale'\]"),
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
     r"other is not a valid parameter. Allowed values are \['x', 'y', 'scale'\]"),
])
def test_the_first_difference_is_named_with_how_to_recompile(given, message):
    # PopTorch's argument parser asserts these two rules; its other checks raise poptorch.Error
    asserted = message.startswith(("Too many arguments", "other is not a valid parameter"))
    with pytest.raises(AssertionError if asserted else Error, match=message):
        check_inputs(Model(), COMPILED, given)


def test_a_mismatch_says_how_to_recompile_and_a_new_batch_size_how_to_keep_it():
    given = call(torch.ones(4, 3), [torch.ones(1)] * 2, scale=2.0)
    with pytest.raises(Error, match=r"Shape mismatch for x: expected torch.Size\(\[2, 3\]\) but "
                                    r"got torch.Size\(\[4, 3\]\). Only the batch dimension "
                                    r"changed: .*\nThis error occurred because .* destroy\(\)"):
        check_inputs(Model(), COMPILED, given)


def test_inputs_bind_to_forwards_parameters_as_poptorch_binds_them():
    x = torch.ones(1)
    assert bind(Model(), (x,), {"y": x}) == ([("x", x), ("y", x), ("scale", 1.0)], {})
    assert bind(Model(), (x, x, 3.0), {}) == bind(Model(), (x,), {"scale": 3.0, "y": x})
    with pytest.raises(Error, match=r"^Mandatory parameter y missing$"):
        bind(Model(), (x,), {})

    class Variadic(torch.nn.Module):
        def forward(self, a, *rest, t=None, **extra):
            return a

    positional, named = bind(Variadic(), (x, 1, 2), {"k": 3})
    assert positional == [("a", x), ("*rest[0]", 1), ("*rest[1]", 2)]
    assert named == {"t": None, "k": 3}  # after *rest a parameter is named, default or not


def test_an_optional_input_given_by_keyword_matches_its_default_when_compiled():
    class Optional(torch.nn.Module):
        def forward(self, x, y=None, scale=torch.ones(1)):
            return x * scale if y is None else (x + y) * scale

    x = torch.ones(2)
    compiled = call(x)
    check_inputs(Optional(), compiled, call(x, scale=torch.full((1,), 2.0)))
    check_inputs(Optional(), compiled, call(x, None))
    with pytest.raises(Error, match=r"Type mismatch for y: expected <class 'NoneType'> but got "
                                    r"<class 'torch.Tensor'>"):
        check_inputs(Optional(), compiled, call(x, y=x))


def test_an_empty_input_weight_or_buffer_is_refused_with_its_shape():
    with pytest.raises(Error, match=r"^Zero-sized tensors are unsupported \(Got shape "
                                    r"\[0, 2, 5\]\)\. Give every input"):
        check_not_zero_sized(Model(), (torch.ones(3), [torch.ones(0, 2, 5)]), {})
    with pytest.raises(Error, match=r"\(Got shape \[4, 0\]\)"):
        with_empty_buffer = torch.nn.Module()
        with_empty_buffer.register_buffer("empty", torch.ones(4, 0))
        check_not_zero_sized(with_empty_buffer, (torch.ones(2, 3),), {})
    check_not_zero_sized(torch.nn.BatchNorm1d(2), (torch.tensor(1.0),), {})  # scalars are fine
