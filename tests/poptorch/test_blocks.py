"""Block annotations: what they record, what they refuse, and that they leave a model's CPU
numerics untouched."""
import copy

import pytest
import torch
import torch.nn as nn

from ipu_tutorials import poptorch
from ipu_tutorials.simulator import tracing
from ipu_tutorials.simulator.capture import capture as capture_graph


def linear_stack(n=3, width=4):
    return nn.Sequential(*[nn.Linear(width, width) for _ in range(n)])


def blocks_seen(model, x):
    """The blocks (id -> ipu) one captured forward pass of `model` reports, in order of use."""
    return capture_graph(model, (x,), {}).blocks


# --- Block, BeginBlock, BlockFunction outside a wrapped model ------------------------------------------
class Annotated(nn.Module):
    """Uses every kind of annotation; on the CPU it must compute exactly plain PyTorch."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 8)
        self.b = poptorch.BeginBlock(nn.Linear(8, 8), "B", ipu_id=1)
        self.c = nn.Linear(8, 2)

    @poptorch.BlockFunction("C", ipu_id=2)
    def head(self, x):
        return self.c(x)

    def forward(self, x):
        with poptorch.Block("A", ipu_id=0):
            x = torch.relu(self.a(x))
        poptorch.Block.start("B2", ipu_id=1)
        return self.head(torch.relu(self.b(x)))


class Plain(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(4, 8), nn.Linear(8, 8), nn.Linear(8, 2)

    def forward(self, x):
        return self.c(torch.relu(self.b(torch.relu(self.a(x)))))


def test_annotated_model_runs_as_plain_pytorch_on_the_cpu():
    annotated = Annotated()
    plain = Plain()
    plain.load_state_dict(annotated.state_dict())
    x = torch.randn(5, 4, requires_grad=True)
    x_plain = x.detach().clone().requires_grad_()
    out, reference = annotated(x), plain(x_plain)
    assert torch.equal(out, reference)
    out.sum().backward()
    reference.sum().backward()
    assert torch.equal(x.grad, x_plain.grad)
    for p, q in zip(annotated.parameters(), plain.parameters()):
        assert torch.equal(p.grad, q.grad)
    assert tracing.STATE.block is None  # nothing was recorded outside a capture
    assert not poptorch.isRunningOnIpu()


def test_block_context_gives_none_as_poptorchs_and_checks_ids():
    block = poptorch.Block("A", ipu_id=0)
    assert isinstance(block, nn.Module)  # as PopTorch's Block
    with block as entered:
        assert entered is None  # PopTorch's __enter__ returns nothing
    assert (block._user_id, block._ipu_id) == ("A", 0)  # PopTorch's private names
    with pytest.raises(TypeError, match=r"poptorch.Block: user_id must be a string such as "
                                        r"\"B1\" or an int \(or None for an automatic id\), got "
                                        r"float 1.0"):
        poptorch.Block(1.0)
    with pytest.raises(ValueError, match=r"poptorch.Block: ipu_id must be an integer >= 0, got -1"):
        poptorch.Block("A", ipu_id=-1)
    with pytest.raises(TypeError, match=r"poptorch.Block.start: user_id must be a string"):
        poptorch.Block.start([0])
    with pytest.raises(TypeError, match=r"poptorch.BlockFunction: ipu_id expects an integer, "
                                        r"got str '1'"):
        poptorch.BlockFunction("A", ipu_id="1")


def test_block_does_not_swallow_exceptions():
    with pytest.raises(KeyError):
        with poptorch.Block("A"):
            raise KeyError("inside")


def test_begin_block_returns_the_layer_and_refuses_a_second_annotation():
    layer = nn.Linear(2, 2)
    assert poptorch.BeginBlock(layer, "B1", ipu_id=0) is layer
    hooks = list(layer._forward_pre_hooks.values())
    assert [repr(h) for h in hooks] == ["BeginBlock(user_id='B1', ipu_id=0)"]
    # PopTorch's class and words (python/ops.py: BeginBlock), then the fix
    with pytest.raises(poptorch.Error, match=r"module has already been assigned to a block: this "
                                             r"Linear already begins one \(BeginBlock\(user_id="
                                             r"'B1', ipu_id=0\)\). Call "
                                             r"poptorch.removeBlocks\(module\) first"):
        poptorch.BeginBlock(layer, "B2", ipu_id=1)
    assert len(layer._forward_pre_hooks) == 1


def test_begin_block_checks_its_arguments():
    with pytest.raises(poptorch.Error, match=r"module is not an instance of torch.nn.Module or "
                                             r"function: poptorch.BeginBlock got int"):
        poptorch.BeginBlock(3, "A")
    with pytest.raises(TypeError, match=r"poptorch.BeginBlock: user_id must be a string .*"
                                        r"got bool True"):
        poptorch.BeginBlock(nn.Linear(2, 2), True)
    with pytest.raises(ValueError, match=r"poptorch.BeginBlock: ipu_id must be an integer >= 0"):
        poptorch.BeginBlock(nn.Linear(2, 2), "A", ipu_id=-3)


def test_remove_blocks_lets_you_annotate_again():
    model = nn.Sequential(poptorch.BeginBlock(nn.Linear(2, 2), "A", ipu_id=0),
                          poptorch.BeginBlock(nn.Linear(2, 2), "B", ipu_id=1))
    other_hook = model[0].register_forward_pre_hook(lambda module, inputs: None)
    assert poptorch.removeBlocks(model) is None  # in place, as PopTorch's
    assert list(model[0]._forward_pre_hooks) == [other_hook.id]  # other hooks stay
    assert len(model[1]._forward_pre_hooks) == 0
    assert poptorch.BeginBlock(model[1], "C", ipu_id=0) is model[1]
    assert [repr(h) for h in model[1]._forward_pre_hooks.values()] == [
        "BeginBlock(user_id='C', ipu_id=0)"]
    with pytest.raises(AssertionError, match=r"poptorch.removeBlocks expects a torch.nn.Module, "
                                             r"got list"):
        poptorch.removeBlocks([model])


def test_block_function_keeps_the_function_and_its_result():
    @poptorch.BlockFunction("F", ipu_id=1)
    def double(x, scale=2):
        """Multiply."""
        return x * scale

    x = torch.randn(3)
    assert torch.equal(double(x), x * 2)
    assert torch.equal(double(x, scale=3), x * 3)
    assert double.__name__ == "double" and double.__doc__ == "Multiply."


def test_begin_block_on_a_function_wraps_it_in_a_block():
    def square(x):
        return x * x

    wrapped = poptorch.BeginBlock(square, "S", ipu_id=0)
    assert wrapped is not square and wrapped.__name__ == "square"
    assert torch.equal(wrapped(torch.tensor([3.0])), torch.tensor([9.0]))


def _add_one(x):
    return x + 1.0


def test_int_block_ids_are_kept_and_survive_copies_and_pickling(tmp_path):
    # was wrong: BeginBlock(..., user_id=1) was refused, and a function's block did not pickle
    # (PopTorch's pipelining_test.py: test_begin_block_copy, test_begin_block_with_function)
    first, second = linear_stack(1), linear_stack(1)
    poptorch.BeginBlock(first, user_id=1, ipu_id=1)
    poptorch.BeginBlock(second, user_id=2, ipu_id=2)
    model = nn.Sequential(first, second)
    for each in (model, copy.copy(model), copy.deepcopy(model)):
        assert "BeginBlock(user_id=1, ipu_id=1)" in poptorch.module_repr(each[0])
        assert "BeginBlock(user_id=2, ipu_id=2)" in poptorch.module_repr(each[1])
    block = poptorch.BeginBlock(_add_one, 1, 2)
    assert (block._user_id, block._ipu_id) == (1, 2)
    torch.save(block, tmp_path / "block.pt")
    assert torch.equal(block(torch.zeros(2)), torch.ones(2))


def test_an_int_block_id_names_the_block_and_matches_a_stage():
    model = linear_stack(2)
    poptorch.BeginBlock(model[0], 0, ipu_id=0)
    poptorch.BeginBlock(model[1], 1, ipu_id=1)
    assert blocks_seen(model, torch.randn(2, 4)) == {"0": 0, "1": 1}
    # PopTorch's Stage takes string ids only; an int block id is named by its digits
    stages = poptorch.PipelinedExecution(poptorch.Stage("0").ipu(1), poptorch.Stage("1").ipu(0))
    opts = poptorch.Options().setExecutionStrategy(stages).showCompilationProgressBar(False)
    opts.Training.gradientAccumulation(4)
    training = poptorch.trainingModel(_WithLoss(model), opts)
    training.compile(torch.randn(4, 4))
    assert training.plan.placement.block_ipu == {"0": 1, "1": 0}


class _WithLoss(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return poptorch.identity_loss(self.inner(x).square(), reduction="mean")


# --- what a capture sees ---------------------------------------------------------------------------
def test_capture_sees_every_annotation_in_order():
    model = Annotated()
    assert list(blocks_seen(model, torch.randn(2, 4)).items()) == [
        ("A", 0), ("B2", 1), ("B", 1), ("C", 2)]
    assert tracing.STATE.block is None and tracing.STATE.capture is None  # restored after


def test_capture_after_remove_blocks_sees_no_blocks():
    model = nn.Sequential(poptorch.BeginBlock(nn.Linear(2, 2), "A", ipu_id=0),
                          poptorch.BeginBlock(nn.Linear(2, 2), "B", ipu_id=1))
    assert blocks_seen(model, torch.randn(1, 2)) == {"A": 0, "B": 1}
    poptorch.removeBlocks(model)
    assert capture_graph(model, (torch.randn(1, 2),), {}).annotated is False
    poptorch.BeginBlock(model[0], "X", ipu_id=0)
    assert blocks_seen(model, torch.randn(1, 2)) == {"X": 0}


def test_auto_ids_number_blocks_from_zero_on_each_pass():
    class Auto(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList(nn.Linear(2, 2) for _ in range(3))

        def forward(self, x):
            poptorch.Block.useAutoId()
            for i, layer in enumerate(self.layers):
                with poptorch.Block(ipu_id=i):
                    x = layer(x)
            return x

    model = Auto()
    assert blocks_seen(model, torch.randn(1, 2)) == {"0": 0, "1": 1, "2": 2}
    assert blocks_seen(model, torch.randn(1, 2)) == {"0": 0, "1": 1, "2": 2}


def test_begin_block_changes_nothing_numerically_inside_a_capture():
    model = linear_stack()
    reference = copy.deepcopy(model)
    for i, layer in enumerate(model):
        poptorch.BeginBlock(layer, f"L{i}", ipu_id=i)
    x = torch.randn(3, 4)
    assert blocks_seen(model, x) == {"L0": 0, "L1": 1, "L2": 2}
    assert torch.equal(model(x), reference(x))


def test_begin_block_on_a_function_starts_a_block_that_lasts():
    # was wrong: BeginBlock on a function made a block that ended when the function returned.
    class Functional(nn.Module):
        def forward(self, x):
            x = x + 1
            x = poptorch.BeginBlock(torch.relu, "second", ipu_id=1)(x)
            return x * 2  # still in "second"

    graph = capture_graph(_FirstBlock(Functional()), (torch.randn(2, 3),), {})
    assert [op.block for op in graph.ops][-2:] == ["second", "second"]


class _FirstBlock(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        poptorch.Block.start("first", ipu_id=0)
        return self.inner(x)


def test_module_repr_without_blocks_is_torchs_repr():
    model = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.ReLU(), nn.Linear(3, 1)))
    assert poptorch.module_repr(model) == repr(model)


def test_module_repr_writes_each_block_before_the_module_it_begins():
    model = linear_stack(2)
    poptorch.BeginBlock(model[1], "B1", ipu_id=1)
    assert poptorch.module_repr(model) == (
        "Sequential(\n"
        "  (0): Linear(in_features=4, out_features=4, bias=True)\n"
        "  (1): BeginBlock(user_id='B1', ipu_id=1) Linear(in_features=4, out_features=4, bias=True)\n"
        ")")


def test_a_wrapped_models_repr_shows_its_blocks():
    model = linear_stack(2)
    poptorch.BeginBlock(model[1], ipu_id=1)
    assert repr(poptorch.inferenceModel(model)) == poptorch.module_repr(model)
    assert "(1): BeginBlock(user_id=None, ipu_id=1) Linear(" in poptorch.module_repr(model)
