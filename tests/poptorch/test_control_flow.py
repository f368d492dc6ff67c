"""poptorch's control flow on the CPU: for_loop, cond and the dynamic slices equal plain
PyTorch, run by value, and say where PopTorch refuses them."""
import warnings

import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.errors import Error


# --- for_loop ---------------------------------------------------------------------------------------------
def test_for_loop_applies_the_body_count_times():
    x, acc = torch.tensor([1.0, 2.0]), torch.zeros(2)
    out = poptorch.for_loop(4, lambda x, acc: (x * 2, acc + x), [x, acc])
    assert torch.equal(out[0], torch.tensor([16.0, 32.0]))
    assert torch.equal(out[1], torch.tensor([15.0, 30.0]))  # 1 + 2 + 4 + 8
    single = poptorch.for_loop(3, lambda t: t + 1, [torch.zeros(1)])
    assert isinstance(single, list) and torch.equal(single[0], torch.tensor([3.0]))


def test_for_loop_gradient_matches_the_unrolled_loop():
    w = torch.tensor([0.5], requires_grad=True)
    (out,) = poptorch.for_loop(3, lambda t: t * w, [torch.tensor([2.0])])
    out.backward()
    assert torch.allclose(out, torch.tensor([0.25]))
    assert torch.allclose(w.grad, torch.tensor([3 * 2.0 * 0.5 ** 2]))


def test_for_loop_rejects_bad_arguments():
    with pytest.raises(ValueError, match=r"for_loop\(count\) must be a positive integer, got 0"):
        poptorch.for_loop(0, lambda t: t, [torch.ones(1)])
    with pytest.raises(TypeError, match=r"for_loop body must be callable"):
        poptorch.for_loop(2, None, [torch.ones(1)])
    with pytest.raises(Error, match=r"for_loop body must return as many tensors as it takes "
                                    r"\(1\), got 2"):
        poptorch.for_loop(2, lambda t: (t, t), [torch.ones(1)])


def loop_model(forward):
    """An inference model whose forward is `forward(x)`."""
    return poptorch.inferenceModel(type("Loop", (torch.nn.Module,), {"forward": forward})())


def test_for_loop_passes_inputs_by_value():
    def body(y):
        y += 1
        return y

    def inside_only(self, x):
        return poptorch.for_loop(3, body, [x])[0]

    def before_and_after(self, x):
        x += 1
        z = poptorch.for_loop(3, body, [x])[0]
        x += 1
        return z

    x = torch.ones(1, 5, dtype=torch.int32)
    assert loop_model(inside_only)(x).tolist() == [[4] * 5]
    assert x.tolist() == [[1] * 5]  # the body's in-place ops worked on a copy
    assert loop_model(before_and_after)(x).tolist() == [[5] * 5]
    assert x.tolist() == [[3] * 5]  # in-place ops on a model input reach the caller's tensor


def test_for_loop_needs_a_list_of_tensors():
    x = torch.ones(2, 3)
    with pytest.raises(ValueError, match=r"expects input tensors \(inputs\) to be a list of "
                                         r"tensors. \(Object is not list"):
        loop_model(lambda self, x: poptorch.for_loop(2, lambda t: t + 1, x))(x)
    with pytest.raises(ValueError, match=r"Object contained in list at index 1 is not "
                                         r"torch.tensor"):
        poptorch.for_loop(2, lambda t, n: (t, n), [x, 5])


def training_with_weight(width: int, body) -> torch.nn.Module:
    """A training module with one weight of `width` ones; its loss sums body(x, weight)."""
    class Weighted(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(width))

        def forward(self, x):
            return poptorch.identity_loss(body(x, self.w).sum(), reduction="sum")

    return Weighted()


def test_for_loop_is_inference_only():
    model = training_with_weight(3, lambda x, w: poptorch.for_loop(2, lambda t: t * w, [x])[0])
    with pytest.raises(Error, match=r"poptorch.for_loop\(\) is only supported in inference"):
        poptorch.trainingModel(model)(torch.ones(2, 3))


# --- cond, dynamic_slice, dynamic_update ---------------------------------------------------------
class Branching(torch.nn.Module):
    def forward(self, x, condition):
        return poptorch.cond(condition, lambda t: t + 1, [x], lambda t: t * 10, [x])[0]


def test_cond_runs_the_chosen_branch_on_copies():
    model = poptorch.inferenceModel(Branching())
    x = torch.ones(1, 2)
    assert model(x, torch.tensor([True])).tolist() == [[2.0, 2.0]]
    assert model(x, torch.tensor([False])).tolist() == [[10.0, 10.0]]
    assert x.tolist() == [[1.0, 1.0]]
    with pytest.raises(ValueError, match=r"then_inps and else_inps tensors to be a list"):
        poptorch.cond(torch.tensor(True), lambda t: t, x, lambda t: t, [x])


class BranchingOnConstants(torch.nn.Module):
    """forward builds a constant operand, so the graph is captured on the CPU, not on meta."""

    def forward(self, x, condition):
        offset = torch.tensor([100.0, -100.0])
        return poptorch.cond(condition, lambda a: a + x, [offset], lambda a: a - x, [offset])[0]


def test_cond_tests_its_condition_at_every_run_even_with_constant_operands():
    model = poptorch.inferenceModel(BranchingOnConstants())
    x = torch.tensor([1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the condition is not a Python read frozen by tracing
        assert model(x, torch.tensor([True])).tolist() == [101.0, -98.0]
        assert model(x, torch.tensor([False])).tolist() == [99.0, -102.0]
        assert model(x, torch.tensor([True])).tolist() == [101.0, -98.0]


def test_cond_is_inference_only():
    model = training_with_weight(2, lambda x, w: poptorch.cond(
        torch.tensor(True), lambda t: t * w, [x], lambda t: t, [x])[0])
    with pytest.raises(Error, match=r"poptorch.cond\(\) is only supported in inference"):
        poptorch.trainingModel(model)(torch.ones(1, 2))


def test_dynamic_slice_and_update_equal_plain_indexing():
    x = torch.arange(18.0).reshape(3, 6)
    start = torch.tensor([1])
    assert torch.equal(poptorch.dynamic_slice(x, 1, start, 2, 1), x[:, 1:3])
    assert torch.equal(poptorch.dynamic_slice(x, 1, start, 3, 2), x[:, 1:4:2])
    src = -torch.ones(3, 2)
    expected = x.clone()
    expected[:, 1:3] = src
    assert torch.equal(poptorch.dynamic_update(x, src, 1, start, 2), expected)
    with pytest.raises(Error, match=r"Slice start argument to dynamic_slice must be a "
                                    r"torch.tensor"):
        poptorch.dynamic_slice(x, 1, 1, 2, 1)
    with pytest.raises(Error, match=r"input and src tensor must have same dtype"):
        poptorch.dynamic_update(x, src.half(), 1, start, 2)


@pytest.mark.parametrize("size, step, message", [
    (0, 1, r"^The start and end of a slice must be different\.$"),
    (-2, 1, r"^Taking a slice of a tensor with the end less than the start is not supported\.$"),
    (2, 0, r"^Slicing step must be at least 1$"),
    (4, 1, r"^The size of the slice \(4\) must be a factor of the slicing dimension \(6\)\.$"),
])
def test_dynamic_slice_refuses_what_poptorch_cannot_lower(size, step, message):
    x, start = torch.zeros(3, 6), torch.tensor([1])
    with pytest.raises(Error, match=message):
        poptorch.dynamic_slice(x, 1, start, size, step)
    if step == 1 and size <= 0:  # the size rules hold for dynamic_update too
        with pytest.raises(Error, match=message):
            poptorch.dynamic_update(x, torch.zeros(3, 1), 1, start, size)


def test_dynamic_update_compares_the_types_the_ipu_holds():
    x, start = torch.zeros(6, dtype=torch.int32), torch.tensor([2])
    out = poptorch.dynamic_update(x, torch.tensor([7, 8]), 0, start, 2)  # int64 src: int32 there
    assert out.dtype == torch.int32 and out.tolist() == [0, 0, 7, 8, 0, 0]
    with pytest.raises(Error, match=r"^input and src tensor must have same dtype\. "
                       r"\(torch\.float32 vs torch\.int32\)$"):
        poptorch.dynamic_update(torch.zeros(6), torch.tensor([7, 8]), 0, start, 2)
