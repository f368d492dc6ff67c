"""The schedule explorer: the simulated IPU's pipeline beside torch's GPipe or 1F1B, for any
number of stages and micro-batches, every stage alike (forward 1 unit, backward 2).

The IPU side is the simulator's own pipelined step; the torch side is the order
torch.distributed.pipelining runs (lesson 16 checks it against four real processes), timed on
the same stage times. A count that PopTorch or torch refuses is said, with its rule.
"""
from __future__ import annotations

from ...errors import Error
from ...profiling.diagrams import unit_stages
from ...simulator.rules import min_gradient_accumulation
from ...tutorial.torch_engines.figures import draw_schedules
from ...tutorial.torch_engines.schedules import (SCHEDULES, bubble, ipu_step, orders_of,
                                                 peak_in_flight, replay, torch_orders)
from .widgets import FIGURE_INCHES, Explorer, choice, slider


def compare_schedules(stages: int = 4, micro_batches: int = 10, schedule: str = "1F1B") -> dict:
    """Both sides of one step: events, idle share and the activations stage 0 keeps.

    Returns:
        {"ipu": {...} or None, "torch": {...} or None, "refused": [messages]}; each side holds
        "events", "bubble" (idle share) and "held" (micro-batches kept on stage 0).
    Raises:
        Error: both sides refuse the counts.
    """
    times, refused, sides = unit_stages(stages), [], {}
    need = min_gradient_accumulation(stages)
    if micro_batches >= need:
        sides["ipu"] = _side(ipu_step(times, micro_batches), stages)
    else:
        refused.append(f"PopTorch refuses gradientAccumulation({micro_batches}) on {stages} "
                       f"pipelined IPUs: it needs at least 2N-1 = {need}")
    try:
        sides["torch"] = _side(replay(torch_orders(schedule, stages, micro_batches), times), stages)
    except ValueError as error:
        refused.append(f"torch's Schedule{schedule} refuses: {error}")
    if not sides:
        raise Error("; ".join(refused))
    return {"ipu": sides.get("ipu"), "torch": sides.get("torch"), "refused": refused,
            "schedule": schedule, "stages": stages, "micro_batches": micro_batches}


def _side(events: list, stages: int) -> dict:
    return {"events": events, "bubble": bubble(events, stages),
            "held": peak_in_flight(orders_of(events, stages)[0])}


def describe(result: dict) -> str:
    n, m = result["stages"], result["micro_batches"]
    parts = [f"(P-1)/(M+P-1) = {n - 1}/{m + n - 1} = {(n - 1) / (m + n - 1):.0%} for equal stages"]
    ipu, torch_side = result["ipu"], result["torch"]
    if ipu:
        parts.append(f"IPU pipeline: {2 * n - 1} pipeline stages, {m + 2 * n - 2} cycles, idle "
                     f"<b>{ipu['bubble']:.0%}</b>, IPU 0 stashes the inputs of {ipu['held']} "
                     f"micro-batches")
    if torch_side:
        parts.append(f"torch {result['schedule']}: idle <b>{torch_side['bubble']:.0%}</b>, stage 0 "
                     f"keeps the activations of {torch_side['held']} micro-batches")
    parts += [f"<span style='color:#c62828'>{message}</span>" for message in result["refused"]]
    return "; ".join(parts)


def schedule_explorer(stages: int = 4, micro_batches: int = 10, schedule: str = "1F1B") -> Explorer:
    """Stages, micro-batches and torch's schedule; the IPU's step and torch's, side by side."""
    controls = {"stages": slider("stages (IPUs / processes)", stages, 2, 8),
                "micro_batches": slider("micro-batches (gradient accumulation)", micro_batches,
                                        1, 32),
                "schedule": choice("torch schedule", SCHEDULES, schedule)}

    def compute(**values):
        result = compare_schedules(**values)
        return {**result, "text": describe(result)}

    def draw(result, figure):
        panels = []
        if result["ipu"]:
            panels.append(("simulated IPU pipeline (PopTorch)", "IPU", result["ipu"]["events"]))
        if result["torch"]:
            panels.append((f"torch Schedule{result['schedule']}", "stage",
                           result["torch"]["events"]))
        draw_schedules(panels, result["stages"], figure)

    return Explorer("Schedule explorer: the IPU's pipeline and torch's", controls, compute, draw,
                    figsize=(FIGURE_INCHES, 5))
