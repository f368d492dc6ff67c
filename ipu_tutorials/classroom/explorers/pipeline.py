"""The pipeline explorer: IPUs, accumulation, device iterations, imbalance, strategy -> timeline.

Every figure comes from compiling a real model with poptorch.trainingModel, so the explorer
shows exactly what the runtime would do with the same options.
"""
from __future__ import annotations

import torch
import torch.nn as nn

from ... import poptorch
from ...profiling.plots import plot_timeline
from ...simulator.compile import Plan
from ...simulator.rules import fill_cycles, pipelines
from ..plans import plan_on_meta
from .widgets import FIGURE_INCHES, Explorer, choice, slider

WIDTH, LAYERS_PER_STAGE = 512, 4


def block_name(ipu: int) -> str:
    return f"B{ipu + 1}"


class StageStack(nn.Module):
    """One block per IPU of Linear+ReLU layers, named as the lessons name theirs ("B1", "B2",
    ...), so an error names blocks the learner knows; the middle one can be heavier."""

    def __init__(self, stages: int, imbalance: float = 0.0):
        super().__init__()
        counts = [LAYERS_PER_STAGE] * stages
        counts[stages // 2] = round(LAYERS_PER_STAGE * (1 + imbalance))
        self.stages = nn.ModuleList(
            nn.Sequential(*[layer for _ in range(n) for layer in (nn.Linear(WIDTH, WIDTH), nn.ReLU())])
            for n in counts)

    def forward(self, x, target):  # x: (B, WIDTH)
        for i, stage in enumerate(self.stages):
            with poptorch.Block(block_name(i), ipu_id=i):
                x = stage(x)
        with poptorch.Block(block_name(len(self.stages) - 1)):
            loss = nn.functional.mse_loss(x, target)
        return x, loss


def pipeline_options(ipus: int, accumulation: int, device_iterations: int,
                     strategy: str) -> poptorch.Options:
    opts = poptorch.Options().deviceIterations(device_iterations)
    opts.Training.gradientAccumulation(accumulation)
    stages = [block_name(i) for i in range(ipus)]
    kind = poptorch.PipelinedExecution if strategy == "pipelined" else poptorch.ShardedExecution
    return opts.setExecutionStrategy(kind(*stages))


def simulate_pipeline(ipus: int = 4, accumulation: int = 8, device_iterations: int = 1,
                      imbalance: float = 0.0, strategy: str = "pipelined",
                      micro_batch: int = 16) -> Plan:
    """Compile StageStack on the meta device and return the simulator's plan (no data needed)."""
    with torch.device("meta"):
        model = StageStack(ipus, imbalance)
    opts = pipeline_options(ipus, accumulation, device_iterations, strategy)
    data = torch.empty(micro_batch * accumulation * device_iterations, WIDTH, device="meta")
    return plan_on_meta(model, opts, poptorch.optim.SGD(model.parameters(), lr=0.01), data, data)


def describe(plan: Plan) -> str:
    spec = plan.spec
    step = plan.device_seconds / spec.device_iterations
    util = " ".join(f"IPU{i}&nbsp;{u:.0%}" for i, u in enumerate(plan.timeline.utilisation()))
    cycles, n = "", len(plan.placement.stages)
    if pipelines(spec, n):
        a, fill = spec.gradient_accumulation, fill_cycles(n, spec.training)
        cycles = (f"{a + fill} cycles per step (fill {fill}, main {a - fill}, "
                  f"flush {fill}); ")
    host = plan.breakdown()["waiting for host data"] > 1e-6 * plan.call_seconds
    fed = (f"; with the host preparing the data, {plan.samples_per_second:,.0f} samples/s "
           f"(host-bound)" if host else "")
    return (f"{cycles}simulated device step {step * 1e6:,.1f} µs, device throughput "
            f"<b>{plan.device_samples_per_second:,.0f} samples/s</b>{fed}; busy: {util}")


def pipeline_explorer(ipus: int = 4, accumulation: int = 8, device_iterations: int = 1,
                      imbalance: float = 0.0, strategy: str = "pipelined") -> Explorer:
    """Sliders for the pipeline; the timeline and throughput of one call update as they move."""
    controls = {
        "ipus": choice("IPUs", [2, 4, 8], ipus),
        "accumulation": slider("gradient accumulation", accumulation, 1, 64),
        "device_iterations": slider("device iterations", device_iterations, 1, 4),
        "imbalance": slider("extra work on one stage", float(imbalance), 0.0, 2.0, 0.25),
        "strategy": choice("strategy", ["pipelined", "sharded"], strategy),
    }

    def compute(**values):
        plan = simulate_pipeline(**values)
        return {"plan": plan, "text": describe(plan)}

    def draw(result, figure):
        plan = result["plan"]
        plot_timeline(plan.timeline.events, plan.placement.ipus_per_replica,
                      ax=figure.subplots(), label_micro_batches=True)

    return Explorer("Pipeline explorer", controls, compute, draw, figsize=(FIGURE_INCHES, 3.8))
