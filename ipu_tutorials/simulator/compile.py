"""Compile: a captured graph and a run spec -> placement, memory plan, costs, timeline."""
from __future__ import annotations

import dataclasses
import functools
import math
from typing import Callable

from . import phases
from .capture import Graph
from .collectives import instance_seconds
from .costs import (HOST_LATENCY, StageCost, allreduce_seconds, host_data_seconds, host_io_bytes,
                    host_seconds, stage_costs, stream_seconds, update_seconds)
from .memory import MemoryPlan, phase_works, plan_memory
from .placement import Placement, place, stage_params
from .rules import schedule_kind
from .schedule import (HOST_DATA_TRACK, HOST_TRACK, StageTimes, StepCosts, call_timeline,
                       pipeline_grid)
from .spec import OUTPUT_ALL, OUTPUT_EVERY_N, RunSpec, StrategyKind
from .timeline import COMPUTE_KINDS, Timeline

# Simulated compile time. PopTorch's "Graph compilation" bar took 1:31 (training) and 0:35
# (inference) for the pipelining tutorial on 4 IPUs (graphcore/tutorials@198c92b:
# tutorials/pytorch/pipelining/README.md); every published pair in
# graphcore/examples' tutorials has training/inference ~2.5-2.6, and even tiny one-IPU models
# took 10-90 s. Calibrated on that tutorial: 10 s + 6 s per IPU + 0.3 s per distinct compute op.
COMPILE_BASE_SECONDS = 10.0
COMPILE_SECONDS_PER_IPU = 6.0
COMPILE_SECONDS_PER_OP = 0.3
COMPILE_TRAINING_FACTOR = 2.6


def _measure(spans: list[tuple[float, float]]) -> float:
    """Total length of a union of intervals."""
    total, reach = 0.0, -math.inf
    for start, end in sorted(spans):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


@dataclasses.dataclass
class Plan:
    """Everything the simulator knows about a compiled model."""

    graph: Graph
    spec: RunSpec
    placement: Placement
    memory: MemoryPlan
    stage_costs: list[StageCost]
    stage_times: list[StageTimes]
    step_costs: StepCosts
    timeline: Timeline  # one call

    @property
    def config(self) -> RunSpec:
        """The run spec under its former name, for code written before RunSpec."""
        return self.spec

    @property
    def call_seconds(self) -> float:
        return self.timeline.duration

    @property
    def samples_per_second(self) -> float:
        return self.spec.samples_per_call / self.call_seconds

    def breakdown(self) -> dict[str, float]:
        """Where one call's simulated seconds go; the four parts add up to call_seconds.

        "IPU compute": some IPU computes (forward, backward, weight update); "exchange and
        sync": IPUs copy, stream, all-reduce or wait for each other and nothing computes;
        "host I/O": the host synchronises and streams inputs and outputs; "waiting for host
        data": the device idles because the host has not prepared the next samples.
        """
        events = self.timeline.events
        device = [(e.start, e.end) for e in events if e.ipu >= 0 and e.duration > 0]
        compute = [(e.start, e.end) for e in events
                   if e.ipu >= 0 and e.kind in COMPUTE_KINDS and e.duration > 0]
        host = [(e.start, e.end) for e in events if e.ipu == HOST_TRACK and e.duration > 0]
        busy = _measure(device + host)
        return {"IPU compute": _measure(compute),
                "exchange and sync": _measure(device) - _measure(compute),
                "host I/O": busy - _measure(device),
                "waiting for host data": max(0.0, self.call_seconds - busy)}

    @property
    def host_data_seconds(self) -> float:
        """The host's data preparation per call (overlapped with the device when asynchronous)."""
        return sum(e.duration for e in self.timeline.events
                   if e.ipu == HOST_DATA_TRACK and e.kind == "data")

    @property
    def device_seconds(self) -> float:
        """A call without the wait for host data: what the IPUs and the host link alone take."""
        return self.call_seconds - self.breakdown()["waiting for host data"]

    @property
    def device_samples_per_second(self) -> float:
        """Throughput if the host kept up: what the IPUs and the host link alone allow."""
        return self.spec.samples_per_call / self.device_seconds

    @property
    def compile_seconds(self) -> float:
        """Simulated graph-compilation time (not measured: see COMPILE_BASE_SECONDS)."""
        ops = {(op.name, op.kind, op.flops, op.bytes_in, op.bytes_out) for op in self.graph.ops
               if op.kind != "view"}
        seconds = (COMPILE_BASE_SECONDS + COMPILE_SECONDS_PER_IPU * self.placement.ipus_per_replica
                   + COMPILE_SECONDS_PER_OP * len(ops))
        return seconds * (COMPILE_TRAINING_FACTOR if self.spec.training else 1.0)

    def breakdown_text(self) -> str:
        """One line: the call's time split by where it goes, and what bounds it."""
        parts = self.breakdown()
        shown = ", ".join(f"{name} {seconds * 1e3:,.3f} ms" for name, seconds in parts.items())
        data = self.host_data_seconds
        mode = "overlapped with the device" if self.spec.loader_async else "before the device"
        host_bound = parts["waiting for host data"] > 1e-6 * self.call_seconds  # not rounding
        bound = "host-bound" if host_bound else "device-bound"
        return (f"Where a call's {self.call_seconds * 1e3:,.3f} ms go: {shown} ({bound}; the "
                f"host prepares the call's samples in {data * 1e3:,.3f} ms, {mode})")

    @property
    def cycles_per_call(self) -> int:
        return round(self.call_seconds * self.spec.system.ipu.clock_hz)

    def grid(self, max_cycles: int = 24) -> str:
        """The text picture of one step's schedule."""
        ipus = [s.ipu for s in self.placement.stages]
        spec = self.spec
        if spec.strategy.kind.phased:
            return self.phase_grid()
        if spec.strategy.kind == StrategyKind.PIPELINED:
            a = spec.gradient_accumulation if spec.training else spec.device_iterations
            return pipeline_grid(ipus, a, spec.training, self.placement.ipus_per_replica,
                                 max_cycles)
        return "\n".join(f"IPU {s.ipu}  " + " ".join(
            f"{e.kind}{e.micro_batch}" for e in self.timeline.events
            if e.ipu == s.ipu and e.stage == s.index and e.step == 0 and e.kind in ("F", "B"))[:200]
            for s in self.placement.stages)

    def phase_grid(self) -> str:
        """What each IPU runs at each phase id of one micro-batch ('F1': phase 1's forward)."""
        works = phase_works(self.graph, self.placement, self.spec)
        strategy = self.spec.strategy
        return phases.describe(works, phases.program(works, strategy.liveness,
                                                     strategy.separate_backward_phase,
                                                     self.spec.training))

    def __repr__(self) -> str:
        p = self.placement
        return (f"Plan({self.spec.strategy.kind}, {len(p.stages)} stage(s) on "
                f"{p.ipus_per_replica} IPU(s) x {p.replicas} replica(s), "
                f"{self.call_seconds * 1e3:.3f} ms per call, {self.samples_per_second:,.0f} samples/s)")

    def describe(self) -> str:
        """Placement, memory plan and schedule summary, as --debug prints them."""
        util = ", ".join(f"IPU {i} {u:.0%}" for i, u in enumerate(self.timeline.utilisation()))
        c = self.spec
        return "\n".join([
            f"Placement ({c.strategy.text}, {self.placement.ipus_per_replica} IPU(s) per replica "
            f"x {c.pod_replicas} replica(s) on {c.system.describe()}):",
            self.placement.describe(), "", "Memory plan (per replica):", self.memory.table(), "",
            "Schedule of one step:", self.grid(), "",
            f"Simulated time per call: {self.call_seconds * 1e3:.3f} ms for "
            f"{c.samples_per_call} samples = {self.samples_per_second:,.0f} samples/s",
            self.breakdown_text(),
            f"Utilisation: {util}",
            f"Simulated compile time: {self.compile_seconds:,.0f} s (an estimate from the graph's "
            f"size, calibrated on the tutorial's published 1:31; real compiles take from tens of seconds to many minutes)"])


def _stage_times(placement: Placement, costs: list[StageCost]) -> list[StageTimes]:
    return [StageTimes(stage.ipu, cost.forward, cost.backward, cost.send, cost.receive, stage.phase)
            for stage, cost in zip(placement.stages, costs)]


def _phased_step(graph: Graph, placement: Placement, costs: list[StageCost], spec: RunSpec):
    """The phased schedule of one step, bound to this plan's stages (phases.phased_step)."""
    works = [dataclasses.replace(work, forward=cost.forward, backward=cost.backward, send=cost.send)
             for work, cost in zip(phase_works(graph, placement, spec), costs)]
    strategy = spec.strategy
    return functools.partial(phases.phased_step, works, strategy.liveness,
                             strategy.separate_backward_phase, training=spec.training,
                             seconds=functools.partial(stream_seconds, system=spec.system))


def _returned_micro_batches(spec: RunSpec) -> int:
    total = spec.device_iterations * spec.gradient_accumulation
    return {OUTPUT_ALL: total, OUTPUT_EVERY_N: total // spec.output_return_period}.get(
        spec.output_mode, 1)


def _step_costs(graph: Graph, placement: Placement, memory: MemoryPlan, spec: RunSpec,
                kind: StrategyKind) -> StepCosts:
    in_bytes, out_bytes = host_io_bytes(graph)
    r = spec.pod_replicas
    steps = spec.device_iterations if spec.training or kind != StrategyKind.PIPELINED else 1
    returned = _returned_micro_batches(spec)
    update, streams, gradient_bytes = {}, {}, 0
    if spec.training:
        for m in memory.ipus:
            names = [n for stage in placement.stages_on(m.ipu) for n in stage_params(graph, stage)
                     if graph.params[n].trainable]
            elements = sum(graph.params[n].numel for n in names)
            touched = m.weights + m.gradients + m.optimizer
            update[m.ipu] = update_seconds(elements, touched, len(names), spec)
            # offloaded optimizer state streams in before the update and back out after it;
            # phased runs stream their off-chip weights and accumulators through it too
            kinds = ("weights", "gradients", "optimizer") if kind.phased else ("optimizer",)
            streams[m.ipu] = stream_seconds(sum(m.off_chip.get(k, 0) for k in kinds), spec.system)
            gradient_bytes = max(gradient_bytes, m.gradients)
    system = spec.system
    links = math.ceil(placement.ipus_per_replica * r / system.ipus_per_host_link)
    data = host_data_seconds(spec.samples_per_call, in_bytes / spec.micro_batch, spec.instances)
    return StepCosts(host_in=host_seconds(in_bytes * r, system, links),
                     host_out=host_seconds(out_bytes * r * returned, system, links) / steps,
                     host_latency=HOST_LATENCY, update=update, update_stream=streams,
                     allreduce=allreduce_seconds(gradient_bytes, spec,
                                                 placement.ipus_per_replica),
                     host_data=data, data_async=spec.loader_async,
                     instance_host=instance_seconds(spec.samples_per_call // spec.micro_batch,
                                                   spec.instances))


def compile_plan(graph: Graph, spec: RunSpec, check_memory: bool = True,
                 progress: Callable[[int], None] = lambda percent: None) -> Plan:
    """Place, plan memory, cost and schedule a captured graph.

    Raises:
        Error: a placement or batching rule is broken.
        OutOfMemoryError: the plan does not fit (when check_memory).
    """
    placement = place(graph, spec)
    progress(20)
    memory = plan_memory(graph, placement, spec)
    progress(20)
    if check_memory:
        memory.check()
    costs = stage_costs(graph, placement, spec)
    times = _stage_times(placement, costs)
    kind = schedule_kind(spec, len(placement.stages))
    step = _step_costs(graph, placement, memory, spec, kind)
    progress(20)
    phased = _phased_step(graph, placement, costs, spec) if kind.phased else None
    events = call_timeline(kind, times, step, spec.gradient_accumulation, spec.device_iterations,
                           spec.training, phased)
    progress(20)
    return Plan(graph, spec, placement, memory, costs, times, step,
                Timeline(events, placement.ipus_per_replica))


__all__ = ["Plan", "compile_plan"]
