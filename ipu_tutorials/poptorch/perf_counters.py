"""The simulated performance queries of PoplarExecutor: latencies, perf counters, cycles."""
from __future__ import annotations

import dataclasses
import datetime

from ..errors import Error

NOT_COMPILED = "the model has not been compiled, or has been destroyed: call it (or .compile()) first"


@dataclasses.dataclass
class CallRecord:
    """What a wrapped model's calls have cost so far, in simulated and in host time."""

    calls: int = 0
    simulated_seconds: float = 0.0  # IPU time of every call so far
    last_call_start: float | None = None  # simulated time the last call began
    host_seconds: float = 0.0  # wall-clock time the host spent running calls

    def add_call(self, call_seconds: float, host_seconds: float) -> None:
        self.last_call_start = self.simulated_seconds
        self.simulated_seconds += call_seconds
        self.host_seconds += host_seconds
        self.calls += 1


class PerfCounters:
    """PopTorch's latency, perf-counter and cycle queries over one plan and its calls."""

    def __init__(self, plan, record: CallRecord, num_inputs: int, log_cycle_count: bool,
                 progress_bar: bool = True):
        self.plan, self.record = plan, record
        self.num_inputs, self.log_cycle_count = num_inputs, log_cycle_count
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
        if not self.record.calls:
            return 0.0, 0.0, 0.0
        if part == "call":
            seconds = self.plan.call_seconds
        else:
            seconds = self.phases()[("host_to_ipu", "compute", "ipu_to_host").index(part)]
        return seconds, seconds, seconds

    def perf_counters(self) -> dict:
        """Simulated timestamps (seconds) of the last call, as `[input index][iteration]` lists."""
        if self.plan is None or not self.record.calls:
            return {k: [[]] for k in ("input", "input_complete", "output", "output_complete")}
        to_ipu, compute, _ = self.phases()
        t0 = self.record.last_call_start
        stamps = {"input": t0, "input_complete": t0 + to_ipu, "output": t0 + to_ipu + compute,
                  "output_complete": t0 + self.plan.call_seconds}
        return {k: [[v] for _ in range(max(1, self.num_inputs))] for k, v in stamps.items()}

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
