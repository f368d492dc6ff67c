"""The simulated performance queries of PoplarExecutor: latencies, perf counters, cycles."""
from __future__ import annotations

import dataclasses
import datetime

import torch
from torch.utils._pytree import tree_flatten

from ..errors import Error
from ._to_simulator import OUTPUT_EVERY_N, OUTPUT_FINAL, OUTPUT_SUM

NOT_COMPILED = "the model has not been compiled, or has been destroyed: call it (or .compile()) first"


@dataclasses.dataclass
class CallRecord:
    """What a wrapped model's calls have cost so far, in simulated and in host time."""

    calls: int = 0
    simulated_seconds: float = 0.0  # IPU time of every call so far
    last_call_start: float | None = None  # simulated time the last call began
    host_seconds: float = 0.0  # wall-clock time the host spent running calls
    outputs: int = 0  # tensors the last call returned

    def add_call(self, call_seconds: float, host_seconds: float, result=None) -> None:
        self.outputs = tensor_count(result)
        self.last_call_start = self.simulated_seconds
        self.simulated_seconds += call_seconds
        self.host_seconds += host_seconds
        self.calls += 1


def tensor_count(tree) -> int:
    return sum(isinstance(t, torch.Tensor) for t in tree_flatten(tree)[0])


@dataclasses.dataclass(frozen=True)
class Streams:
    """What a call streams: how many input and output tensors, and how many times each."""

    inputs: int
    outputs: int
    steps: int  # device iterations
    replicas: int
    accumulation: int
    mode: str  # the RunSpec's output mode: never Default
    period: int  # OutputMode.EveryN's return period
    synthetic: bool  # opts.enableSyntheticData(True): nothing crosses the host link

    def input_counts(self) -> list[int]:
        """Entries per device iteration of each input's counters: one per micro-batch per replica."""
        return [] if self.synthetic else [self.accumulation * self.replicas] * self.steps

    def output_counts(self) -> list[int]:
        """Entries per device iteration of each output's counters, as the output mode returns
        them: every micro-batch (All), every period-th iteration's (EveryN), one per replica at
        the end (Final, Sum)."""
        if self.synthetic:
            return []
        counts = [self.accumulation * self.replicas] * self.steps
        if self.mode in (OUTPUT_FINAL, OUTPUT_SUM):
            counts = [0] * (self.steps - 1) + [self.replicas]
        elif self.mode == OUTPUT_EVERY_N:
            counts = [c if (s + 1) % self.period == 0 else 0 for s, c in enumerate(counts)]
        return counts


def streams(spec, inputs: int, outputs: int) -> Streams:
    """What each call of the compiled model (its RunSpec) streams, for these tensor counts."""
    return Streams(inputs, outputs, spec.device_iterations, spec.replication_factor,
                   spec.gradient_accumulation if spec.training else 1, spec.output_mode,
                   spec.output_return_period, spec.synthetic_data)


def step_windows(events, call_seconds: float) -> list[tuple[float, float, float, float]]:
    """(input, input complete, output, output complete) seconds into the call of each device
    iteration: its first host event streams the inputs, its last one the outputs. The first
    input starts with the call and the last output ends with it, so that they span
    getLatency() (which includes the host's wait for data, docs/cost-model.md)."""
    steps = sorted({e.step for e in events if e.kind == "host" and e.step is not None})
    windows = []
    for step in steps:
        host = sorted((e for e in events if e.kind == "host" and e.step == step),
                      key=lambda e: e.start)
        windows.append([host[0].start, host[0].end, host[-1].start, host[-1].end])
    if windows:
        windows[0][0], windows[-1][3] = 0.0, call_seconds
    return [tuple(w) for w in windows]


class PerfCounters:
    """PopTorch's latency, perf-counter and cycle queries over one plan and its calls."""

    def __init__(self, plan, record: CallRecord, streamed: Streams, log_cycle_count: bool,
                 progress_bar: bool = True):
        self.plan, self.record = plan, record
        self.streamed, self.log_cycle_count = streamed, log_cycle_count
        self.progress_bar = progress_bar  # PopTorch times the compilation with its progress bar

    def phases(self) -> tuple[float, float, float]:
        """(host to IPU, compute, IPU to host) seconds of one call: the host work before the
        first IPU event, the host work after the last one, and everything between."""
        events = self.plan.timeline.events
        device = [e for e in events if e.kind != "host"]
        first = min((e.start for e in device), default=0.0)
        last = max((e.end for e in device), default=0.0)
        to_ipu = sum(e.duration for e in events if e.kind == "host" and e.end <= first)
        to_host = sum(e.duration for e in events if e.kind == "host" and e.start >= last)
        return to_ipu, self.plan.call_seconds - to_ipu - to_host, to_host

    def _require_compiled(self) -> None:
        if self.plan is None:
            raise Error(NOT_COMPILED)

    def latency(self, part: str) -> tuple[float, float, float]:
        """(min, max, avg) simulated seconds of `part`: host_to_ipu, compute, ipu_to_host, call."""
        self._require_compiled()
        if not self.record.calls or self.streamed.synthetic:
            return 0.0, 0.0, 0.0  # as PopTorch: no streamed data, no time stamps to measure
        if part == "call":
            seconds = self.plan.call_seconds
        else:
            seconds = self.phases()[("host_to_ipu", "compute", "ipu_to_host").index(part)]
        return seconds, seconds, seconds

    def perf_counters(self) -> dict:
        """Simulated timestamps (seconds) of the last call, as `[tensor index][entry]` lists:
        inputs stamped at each micro-batch of each replica, outputs as the output mode returns
        them. Micro-batches and replicas of one device iteration share its stamps."""
        if self.plan is None or not self.record.calls:
            return {k: [[]] for k in ("input", "input_complete", "output", "output_complete")}
        t0 = self.record.last_call_start
        windows = step_windows(self.plan.timeline.events, self.plan.call_seconds)
        streamed = self.streamed

        def stamps(field: int, counts: list[int], tensors: int) -> list[list[float]]:
            entries = [t0 + w[field] for w, n in zip(windows, counts) for _ in range(n)]
            return [list(entries) for _ in range(tensors)] or [[]]
        inputs, outputs = streamed.input_counts(), streamed.output_counts()
        return {"input": stamps(0, inputs, streamed.inputs),
                "input_complete": stamps(1, inputs, streamed.inputs),
                "output": stamps(2, outputs, streamed.outputs),
                "output_complete": stamps(3, outputs, streamed.outputs)}

    def cycle_count(self) -> int:
        if not self.log_cycle_count:
            raise Error("cycle count logging is disabled: set opts.logCycleCount(True) before "
                        "wrapping the model")
        if not self.record.calls:
            raise Error("run the model at least once before asking for its cycle count")
        self._require_compiled()
        return self.plan.cycles_per_call

    def compilation_time(self) -> datetime.timedelta:
        """The simulated compile time (plan.compile_seconds), with PopTorch's two refusals."""
        if self.plan is None:
            raise Error("Please compile the model before obtaining compilation time.")
        if not self.progress_bar:
            raise Error("Please set showCompilationProgressBar option to obtain compilation "
                        "time.")
        return datetime.timedelta(seconds=self.plan.compile_seconds)


class PerfQueries:
    """PoplarExecutor's PopTorch-named performance queries; the executor supplies _counters()."""

    def _counters(self) -> PerfCounters:
        raise NotImplementedError

    def getHostIpuLatency(self):
        """(min, max, avg) simulated seconds to stream a call's inputs to the IPU."""
        return self._counters().latency("host_to_ipu")

    def getComputeLatency(self):
        """(min, max, avg) simulated seconds the IPUs compute in a call."""
        return self._counters().latency("compute")

    def getIpuHostLatency(self):
        """(min, max, avg) simulated seconds to stream a call's outputs back to the host."""
        return self._counters().latency("ipu_to_host")

    def getLatency(self):
        """(min, max, avg) simulated seconds of a whole call, inputs to outputs."""
        return self._counters().latency("call")

    def getPerfCounters(self) -> dict:
        """Simulated timestamps (seconds) of the last call, as `[input index][iteration]` lists."""
        return self._counters().perf_counters()

    def cycleCount(self) -> int:
        """Simulated IPU cycles of the last call (needs opts.logCycleCount(True))."""
        return self._counters().cycle_count()

    def compilationTime(self):
        """The simulated compile time on hardware (plan.compile_seconds), a datetime.timedelta;
        PopTorch measures it with the progress bar, so it needs showCompilationProgressBar."""
        return self._counters().compilation_time()
