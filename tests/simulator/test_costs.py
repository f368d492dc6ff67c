"""The cost model: op costs, the available-memory trade-off and MultiConv (published runs:
tests/calibration/test_published_runs.py)."""
import pytest
import torch
import torch.nn as nn

from ipu_tutorials import poptorch
from ipu_tutorials.support import environment
from ipu_tutorials.poptorch import _to_simulator
from ipu_tutorials.simulator import capture, compile_plan
from ipu_tutorials.simulator.capture import Op
from ipu_tutorials.simulator.costs import OP_OVERHEAD_CYCLES, op_seconds
from ipu_tutorials.simulator.matmul import AMP_FRACTION
from ipu_tutorials.simulator.hardware import GC200


def matmul(flops=1e12, bytes_in=1000, out_elements=100, dtype_bytes=2):
    return Op(0, "aten.mm", "b", "", "matmul", flops, bytes_in, out_elements * dtype_bytes,
              out_elements, dtype_bytes)


def test_a_matmul_of_unknown_shape_runs_at_the_calibrated_fraction_of_peak():
    overhead = OP_OVERHEAD_CYCLES / GC200.clock_hz
    fp16 = op_seconds(matmul(dtype_bytes=2), GC200, 1e9, 4) - overhead
    fp32 = op_seconds(matmul(dtype_bytes=4), GC200, 1e9, 4) - overhead
    assert fp16 == pytest.approx(1e12 / (250e12 * AMP_FRACTION))
    assert fp32 == pytest.approx(4 * fp16)  # fp16 peak is 4x fp32 peak on Mk2


def test_less_temporary_memory_than_a_matmul_wants_costs_cycles():
    op = matmul(bytes_in=4_000_000, out_elements=1_000_000)
    wanted = op.bytes_in + op.out_elements * 4
    roomy = op_seconds(op, GC200, 2 * wanted, 4)
    tight = op_seconds(op, GC200, wanted / 4, 4)
    overhead = OP_OVERHEAD_CYCLES / GC200.clock_hz
    assert tight - overhead == pytest.approx(4 * (roomy - overhead))


def plan_of(model, *inputs, training=False, **options):
    opts = poptorch.Options()
    for name, value in options.items():
        getattr(opts, name)(value)
    graph = capture(model, inputs, {})
    micro = inputs[0].shape[0]
    spec = _to_simulator.options_spec(opts, training, None, environment.read(), micro_batch=micro)
    return compile_plan(graph, spec)


class TwoConvs(nn.Module):
    def __init__(self, together: bool, plan=poptorch.MultiConvPlanType.Parallel):
        super().__init__()
        self.a, self.b = nn.Conv2d(8, 8, 3), nn.Conv2d(8, 8, 3)
        self.together, self.plan = together, plan

    def forward(self, x):
        if not self.together:
            return self.a(x) + self.b(x)
        with poptorch.MultiConv().planType(self.plan):
            y, z = self.a(x), self.b(x)
        return y + z


def test_a_parallel_multiconv_takes_as_long_as_its_slowest_convolution():
    x = torch.randn(4, 8, 32, 32)
    apart = plan_of(TwoConvs(False), x).stage_costs[0].forward
    together = plan_of(TwoConvs(True), x).stage_costs[0].forward
    serial = plan_of(TwoConvs(True, poptorch.MultiConvPlanType.Serial), x).stage_costs[0].forward
    single_conv = op_seconds(capture(TwoConvs(False), (x,), {}).ops[0], GC200, 1e9, 4)
    assert together == pytest.approx(apart - single_conv)
    assert serial == pytest.approx(apart)


def test_set_available_memory_reaches_the_cost_model():
    class Capped(nn.Module):
        def __init__(self, proportion):
            super().__init__()
            self.fc, self.proportion = nn.Linear(4096, 4096), proportion

        def forward(self, x):
            return poptorch.set_available_memory(self.fc(x), self.proportion)

    x = torch.randn(4096, 4096)
    roomy = plan_of(Capped(0.6), x)
    tight = plan_of(Capped(0.01), x)
    assert tight.stage_costs[0].forward > roomy.stage_costs[0].forward
    assert tight.memory[0].temporaries < roomy.memory[0].temporaries


class OneTensorTwoReaders(nn.Module):
    """Block a (IPU 0) makes x; blocks b and c, both on IPU 1, read it."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(64, 64), nn.Linear(64, 64), nn.Linear(64, 64)

    def forward(self, x):
        with poptorch.Block("a", ipu_id=0):
            x = self.a(x)
        with poptorch.Block("b", ipu_id=1):
            y = self.b(x)
        with poptorch.Block("c", ipu_id=1):
            z = self.c(x) + y
        return z


def test_a_tensor_crosses_to_an_ipu_once_however_many_of_its_blocks_read_it():
    from ipu_tutorials.simulator.costs import crossing_bytes
    x = torch.randn(8, 64)
    opts = poptorch.Options().deviceIterations(2)
    opts.setExecutionStrategy(poptorch.PipelinedExecution())
    graph = capture(OneTensorTwoReaders(), (x,), {})
    plan = compile_plan(graph, _to_simulator.options_spec(opts, False, None, environment.read(),
                                                          micro_batch=8))
    first = plan.placement.stages[0]
    assert graph.edges[("a", "b")] == graph.edges[("a", "c")] == 8 * 64 * 4
    assert crossing_bytes(graph, plan.placement, first) == (8 * 64 * 4, 0)
