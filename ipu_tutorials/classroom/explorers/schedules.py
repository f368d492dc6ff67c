"""The schedule explorer: the simulated IPU's pipeline beside torch's GPipe or 1F1B, for any
number of stages and micro-batches, every stage alike (forward 1 unit, backward 2).

The IPU side is the simulator's own pipelined step, whose backwards first recompute their
forward (PopTorch's pipelines do by default): 3 units each. The torch side is the order
torch.distributed.pipelining runs (lesson 16 checks it against four real processes), timed on
the stage times without recomputation, and also with it (each stage's forward under
activation checkpointing), so that both sides can be compared on the same work. A count that
PopTorch or torch refuses is said, with its rule.
"""
from __future__ import annotations

import dataclasses

from ...errors import Error
from ...profiling.diagrams import unit_stages
from ...simulator.costs import with_recomputation
from ...simulator.rules import min_gradient_accumulation, pipeline_depth
from ...simulator.schedule import StageTimes, clock_cycles
from ...torch_engines.figures import draw_schedules
from ...torch_engines.schedules import (SCHEDULES, bubble, ipu_step, orders_of, peak_in_flight,
                                        replay, torch_orders)
from .widgets import FIGURE_INCHES, Explorer, choice, slider

# the time axis of every figure that sets the IPU's recomputing pipeline beside torch's
TIME_AXIS = ("time (forward = 1 unit, backward = 2 units, every stage alike; the IPU's backward "
             "also recomputes its forward: 3 units)")


def recomputing_stages(stages: int) -> list[StageTimes]:
    """Equal stages whose backward first recomputes the forward from the stashed inputs, as
    the simulator charges a pipelined IPU's backward (costs.with_recomputation): 1 + 2 units."""
    return [dataclasses.replace(s, backward=with_recomputation(s.forward, s.backward))
            for s in unit_stages(stages)]


def compare_schedules(stages: int = 4, micro_batches: int = 10, schedule: str = "1F1B") -> dict:
    """Both sides of one step: events, idle share, step length and what stage 0 keeps.

    Returns:
        {"ipu": {...} or None, "torch": {...} or None, "refused": [messages]}; each side holds
        "events", "bubble" (idle share), "step" (units from the first forward to the last
        backward) and "held" (micro-batches kept on stage 0); torch's side also holds
        "recomputing", its step if each stage recomputed its forward as the IPU's do.
    Raises:
        Error: both sides refuse the counts.
    """
    refused, sides = [], {}
    need = min_gradient_accumulation(stages)
    if micro_batches >= need:
        sides["ipu"] = _side(ipu_step(recomputing_stages(stages), micro_batches), stages)
    else:
        refused.append(f"PopTorch refuses gradientAccumulation({micro_batches}) on {stages} "
                       f"pipelined IPUs: it needs at least 2N-1 = {need}")
    try:
        orders = torch_orders(schedule, stages, micro_batches)
        sides["torch"] = _side(replay(orders, unit_stages(stages)), stages)
        sides["torch"]["recomputing"] = step_length(replay(orders, recomputing_stages(stages)))
    except ValueError as error:
        refused.append(f"torch's Schedule{schedule} refuses: {error}")
    if not sides:
        raise Error("; ".join(refused))
    return {"ipu": sides.get("ipu"), "torch": sides.get("torch"), "refused": refused,
            "schedule": schedule, "stages": stages, "micro_batches": micro_batches}


def step_length(events: list) -> float:
    """Units from the first forward to the end of the last backward."""
    work = [e for e in events if e.kind in ("F", "B")]
    return max(e.end for e in work) - min(e.start for e in work)


def _side(events: list, stages: int) -> dict:
    return {"events": events, "bubble": bubble(events, stages), "step": step_length(events),
            "held": peak_in_flight(orders_of(events, stages)[0])}


def describe(result: dict) -> str:
    n, m = result["stages"], result["micro_batches"]
    parts = [f"(P-1)/(M+P-1) = {n - 1}/{m + n - 1} = {(n - 1) / (m + n - 1):.0%} for equal stages"]
    ipu, torch_side = result["ipu"], result["torch"]
    if ipu:
        depth = pipeline_depth(n, training=True)  # 2N-1
        parts.append(f"IPU pipeline: {depth} pipeline stages, {len(clock_cycles(m, depth))} "
                     f"cycles, a step of {ipu['step']:.0f} units (each backward recomputes its "
                     f"forward), idle <b>{ipu['bubble']:.0%}</b>, IPU 0 stashes the inputs of "
                     f"{ipu['held']} micro-batches")
    if torch_side:
        parts.append(f"torch {result['schedule']}: a step of {torch_side['step']:.0f} units "
                     f"({torch_side['recomputing']:.0f} if it recomputed too), idle "
                     f"<b>{torch_side['bubble']:.0%}</b>, stage 0 keeps the activations of "
                     f"{torch_side['held']} micro-batches")
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
            panels.append(("simulated IPU pipeline (PopTorch): each backward recomputes its "
                           "forward", "IPU", result["ipu"]["events"]))
        if result["torch"]:
            panels.append((f"torch Schedule{result['schedule']}", "stage",
                           result["torch"]["events"]))
        draw_schedules(panels, result["stages"], figure, xlabel=TIME_AXIS)

    return Explorer("Schedule explorer: the IPU's pipeline and torch's", controls, compute, draw,
                    figsize=(FIGURE_INCHES, 5))
