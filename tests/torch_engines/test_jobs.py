"""The per-rank jobs' pure parts; test_runs.py beside this file runs them in processes."""
import pytest
import torch

from ipu_tutorials.tutorial.models import Network
from ipu_tutorials.torch_engines.jobs import (boundary_shapes, record_order,
                                                       sharded_state, stage_modules)


def test_the_four_stages_are_lesson_4s_network():
    net = Network()
    images = torch.randn(8, 1, 28, 28)
    x = images
    for stage in stage_modules(net):
        x = stage(x)
    assert torch.equal(x, net(images))
    assert (sum(p.numel() for s in stage_modules(net) for p in s.parameters()) ==
            sum(p.numel() for p in net.parameters()))


def test_the_shapes_between_the_stages():
    assert boundary_shapes(40) == [(40, 1, 28, 28), (40, 10, 12, 12), (40, 20, 4, 4), (40, 256),
                                   (40, 10)]


def test_the_order_is_recorded_as_the_schedule_calls_the_stage():
    class Stage:
        def forward_one_chunk(self, chunk, *args, **kwargs):
            return f"forward {chunk}"

        def backward_one_chunk(self, chunk, *args, **kwargs):
            return f"backward {chunk}"

    stage = Stage()
    order = record_order(stage)
    assert stage.forward_one_chunk(0) == "forward 0"
    assert stage.backward_one_chunk(0, loss=None) == "backward 0"
    stage.forward_one_chunk(1)
    assert order == ["F0", "B0", "F1"]


def test_an_unknown_sharding_is_refused():
    with pytest.raises(ValueError, match="unknown sharding 'zero3'; choose 'zero' or 'fsdp'"):
        sharded_state(0, 1, torch.device("cpu"), "zero3", torch.zeros(4, 1, 28, 28),
                      torch.zeros(4, dtype=torch.long), 1, 0, 0.001)
