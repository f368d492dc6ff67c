"""Capture: blocks, FLOPs, bytes, parameters and boundary activations of one forward pass."""
import torch
import torch.nn as nn

from ipu_tutorials import poptorch
from ipu_tutorials.tutorial.models import Network, TrainingModelWithLoss
from ipu_tutorials.simulator.capture import HOST, WHOLE_MODEL, capture

MB = 40


def tutorial_graph():
    x, y = torch.randn(MB, 1, 28, 28), torch.randint(0, 10, (MB,))
    return capture(TrainingModelWithLoss(Network()), (x, y), {})


def test_every_op_lands_in_its_block_in_order():
    graph = tutorial_graph()
    assert list(graph.blocks) == ["B1", "B2", "B3", "B4"]
    assert [op.block for op in graph.ops if op.kind == "matmul"] == ["B1", "B2", "B3", "B4"]


def test_convolution_and_linear_flops():
    graph = tutorial_graph()
    flops = [op.flops for op in graph.ops if op.kind == "matmul"]
    assert flops == [2 * MB * 10 * 24 * 24 * 25, 2 * MB * 20 * 8 * 8 * 250,
                     2 * MB * 320 * 256, 2 * MB * 256 * 10]


def test_activations_crossing_blocks_are_counted_once_with_their_size():
    edges = tutorial_graph().edges
    assert edges[(HOST, "B1")] == MB * 28 * 28 * 4
    assert edges[("B1", "B2")] == MB * 10 * 12 * 12 * 4
    assert edges[("B2", "B3")] == MB * 320 * 4
    assert edges[("B3", "B4")] == MB * 256 * 4
    assert edges[(HOST, "B4")] == MB * 8  # the int64 labels


def test_parameters_belong_to_the_blocks_that_use_them():
    params = tutorial_graph().params
    assert params["model.layer3.weight"].blocks == ["B3"]
    assert params["model.layer1.conv.weight"].numel == 10 * 25
    assert sum(p.numel for p in params.values()) == sum(
        p.numel() for p in Network().parameters())


def test_the_loss_is_found_among_the_outputs():
    graph = tutorial_graph()
    assert graph.losses_found == 1 and graph.loss.output == 1
    assert graph.outputs == [((MB, 10), torch.float32), ((), torch.float32)]


def test_capture_runs_on_meta_tensors_and_leaves_the_model_untouched():
    net = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))
    before = {k: v.clone() for k, v in net.state_dict().items()}
    capture(net, (torch.randn(8, 4),), {})
    for key, value in net.state_dict().items():
        assert torch.equal(value, before[key]), key


def test_value_dependent_models_fall_back_to_a_real_pass():
    class Branchy(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            return self.fc(x) if x.sum() > -1e9 else x  # reads a value

    graph = capture(Branchy(), (torch.randn(2, 4),), {})
    assert any(op.name == "aten.addmm" for op in graph.ops)


def test_an_unannotated_model_is_one_block():
    graph = capture(nn.Linear(4, 2), (torch.randn(3, 4),), {})
    assert list(graph.blocks) == [WHOLE_MODEL] and not graph.annotated


def test_begin_block_starts_at_a_module_and_earlier_ops_join_the_first_block():
    class Begun(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = poptorch.BeginBlock(nn.Linear(4, 4), "first", ipu_id=0)
            self.b = poptorch.BeginBlock(nn.Linear(4, 4), "second", ipu_id=1)

        def forward(self, x):
            x = x * 2  # before any block
            return self.b(self.a(x))

    graph = capture(Begun(), (torch.randn(3, 4),), {})
    assert graph.blocks == {"first": 0, "second": 1}
    assert graph.ops[0].name == "aten.mul" and graph.ops[0].block == "first"
    assert graph.edges[(HOST, "first")] == 3 * 4 * 4


def test_auto_ids_number_unnamed_blocks():
    class Unnamed(nn.Module):
        def forward(self, x):
            poptorch.Block.useAutoId()
            with poptorch.Block(ipu_id=0):
                x = x + 1
            with poptorch.Block(ipu_id=1):
                x = x * 2
            return x

    assert capture(Unnamed(), (torch.ones(2),), {}).blocks == {"0": 0, "1": 1}


def test_modules_are_named_for_error_messages():
    ops = tutorial_graph().ops
    assert ops[0].module == "model.layer1.conv"


def test_set_available_memory_after_a_linear_on_a_sequence_reaches_its_matmul():
    """nn.Linear on (B, T, C) ends in a view of its matmul's result (lesson 7)."""

    class Projection(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 32)

        def forward(self, x):
            y = poptorch.set_available_memory(self.fc(x), 0.1)
            return poptorch.identity_loss(y.sum(), reduction="sum")

    model = Projection()
    training = poptorch.trainingModel(model, poptorch.Options(),
                                      poptorch.optim.SGD(model.parameters(), lr=0.1))
    training.compile(torch.randn(2, 5, 16))
    capped = {op.kind: op.available_memory for op in training.plan.graph.ops
              if op.available_memory is not None}
    assert capped == {"matmul": 0.1}
