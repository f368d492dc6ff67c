"""The Lightning explorer: Trainer arguments -> the options IPUStrategy builds -> one IPU call."""
from __future__ import annotations

from ... import poptorch
from ...profiling.plots import plot_timeline
from ...tutorial.loops import strategy as tutorial_strategy
from ..plans import tutorial_plan
from .widgets import FIGURE_INCHES, Explorer, choice, slider


def lightning_call(devices: int = 2, accumulate_grad_batches: int = 8, device_iterations: int = 2,
                   batch_size: int = 16, execution: str = "pipelined") -> dict:
    """What one Lightning batch becomes on the simulated IPUs, for the tutorial CNN.

    Returns:
        {"options": the training options IPUStrategy builds, "plan": the compiled plan,
         "combined": samples per Lightning batch, "updates": weight updates per batch}.

    Raises:
        poptorch.Error: the options break a rule (e.g. too little accumulation to pipeline).
    """
    from ...lightning.strategy import default_options

    options = default_options(devices, accumulate_grad_batches, device_iterations)
    plan = tutorial_plan(tutorial_strategy(execution), accumulation=accumulate_grad_batches,
                         device_iterations=device_iterations, micro_batch=batch_size,
                         options=options)
    combined = batch_size * devices * accumulate_grad_batches * device_iterations
    return {"options": options, "plan": plan, "combined": combined, "updates": device_iterations}


def describe_call(result: dict) -> str:
    plan, opts = result["plan"], result["options"]
    ipus = plan.placement.ipus_per_replica * opts.replication_factor
    return (f"<code>replicationFactor({opts.replication_factor})</code>, "
            f"<code>deviceIterations({opts.device_iterations})</code>, "
            f"<code>Training.gradientAccumulation({opts.Training.gradient_accumulation})</code>: "
            f"each Lightning batch holds <b>{result['combined']:,} images</b> and makes "
            f"{result['updates']} weight update(s) on {ipus} IPUs; simulated "
            f"{plan.call_seconds * 1e3:,.3f} ms per batch, "
            f"<b>{plan.samples_per_second:,.0f} images/s</b> "
            f"over all replicas")


def lightning_explorer(devices: int = 2, accumulate_grad_batches: int = 8,
                       device_iterations: int = 2, batch_size: int = 16,
                       execution: str = "pipelined") -> Explorer:
    """Move the Trainer's knobs; see the options, the batch, the throughput and one replica's call."""
    controls = {
        "devices": choice("Trainer(devices=)", [1, 2, 4], devices),
        "accumulate_grad_batches": slider("accumulate_grad_batches", accumulate_grad_batches, 1, 16),
        "device_iterations": slider("IPUStrategy(device_iterations=)", device_iterations, 1, 4),
        "batch_size": choice("DataLoader(batch_size=)", [8, 16, 32], batch_size),
        "execution": choice("execution", ["pipelined", "sharded"], execution),
    }

    def compute(**values):
        result = lightning_call(**values)
        return {**result, "text": describe_call(result)}

    def draw(result, figure):
        plan = result["plan"]
        plot_timeline(plan.timeline.events, plan.placement.ipus_per_replica, ax=figure.subplots())

    return Explorer("Lightning explorer: one batch", controls, compute, draw,
                    figsize=(FIGURE_INCHES, 4))
