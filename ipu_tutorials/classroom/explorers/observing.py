"""The report explorer: strategy, device iterations and accumulation -> a profiling report's
memory and timeline panels, and where a call's time goes.

Every panel is drawn from a profiling.Report of the tutorial's network compiled with
poptorch.trainingModel, saved to a directory and loaded back, as a learner would read one.
"""
from __future__ import annotations

import functools
import tempfile

import torch

from ... import poptorch
from ...profiling import Report, load_report
from ...tutorial import training_options
from ...tutorial.models import Network, TrainingModelWithLoss
from .widgets import FIGURE_INCHES, Explorer, choice, slider

MICRO_BATCH = 16
STRATEGIES = ("pipelined", "sharded")
ACCUMULATIONS = (8, 16, 32)


@functools.lru_cache(maxsize=32)
def compiled_report(strategy: str = "pipelined", device_iterations: int = 1,
                    accumulation: int = 8) -> Report:
    """Compile the tutorial's network (B1..B4 on 4 IPUs), save its report, load it back.

    Raises:
        ValueError: an unknown strategy.
    """
    opts = training_options(strategy, device_iterations, accumulation, output_all=False)
    opts.showCompilationProgressBar(False)
    torch.manual_seed(0)
    net = Network()
    model = poptorch.trainingModel(TrainingModelWithLoss(net), opts,
                                   poptorch.optim.SGD(net.parameters(), lr=0.01))
    samples = MICRO_BATCH * device_iterations * accumulation
    model.compile(torch.zeros(samples, 1, 28, 28), torch.zeros(samples, dtype=torch.long))
    with tempfile.TemporaryDirectory() as directory:
        report = load_report(model.report().save(directory))
    model.destroy()
    return report


def describe(report: Report) -> str:
    """One paragraph: the call's time split and the fullest IPU, as the report states them."""
    schedule = report.summary["schedule"]
    call = schedule["call_seconds"]
    parts = ", ".join(f"{name} {seconds / call:.0%}" for name, seconds in
                      schedule["breakdown"].items())
    fullest = max(report.memory, key=lambda m: m["total"])
    return (f"{report.summary['placement']['kind']} on {report.num_ipus} IPUs: a call of "
            f"{report.summary['batching']['samples_per_call']} images takes "
            f"<b>{call * 1e3:.3f} ms</b> ({report.throughput:,.0f} images/s): {parts}. "
            f"Fullest IPU: IPU {fullest['ipu']}, {fullest['total'] / 2**20:.1f} MiB of "
            f"{fullest['capacity'] / 2**20:,.0f} MiB.")


def draw(report: Report, figure) -> None:
    """The memory panel above the timeline: each as wide as the column."""
    memory_axis, timeline_axis = figure.subplots(2, 1, gridspec_kw={"height_ratios": [2, 3]})
    report.plot_memory(ax=memory_axis, zoom=True)
    report.plot_timeline(ax=timeline_axis, steps=1, title="one device iteration",
                         label_micro_batches=False)


def report_explorer(strategy: str = "pipelined", device_iterations: int = 1,
                    accumulation: int = 8) -> Explorer:
    """Choose how the tutorial's network runs; read its report's memory and timeline."""
    controls = {"strategy": choice("strategy", STRATEGIES, strategy),
                "device_iterations": slider("device iterations", device_iterations, 1, 16),
                "accumulation": choice("gradient accumulation", ACCUMULATIONS, accumulation)}

    def compute(strategy, device_iterations, accumulation):
        report = compiled_report(strategy, device_iterations, accumulation)
        return {"report": report, "text": describe(report)}

    return Explorer("Report explorer: a profiling report's memory and timeline", controls,
                    compute, lambda result, figure: draw(result["report"], figure),
                    figsize=(FIGURE_INCHES, 6.4))
