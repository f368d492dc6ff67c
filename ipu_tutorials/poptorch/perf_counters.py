"""The simulated performance queries of PoplarExecutor: latencies, perf counters, cycles."""
from __future__ import annotations

import datetime

import torch
from torch.utils._pytree import tree_flatten

from ..errors import Error


class PerfCounters:
    """Mixed into PoplarExecutor; reads its plan, its call count and its simulated clock."""

    def _phases(self) -> tuple[float, float, float]:
        """(host to IPU, compute, IPU to host) seconds of one call: the host work before the
        first IPU event, the host work after the last one, and everything between."""
        events = self._plan.timeline.events
        device = [e for e in events if e.kind != "host"]
        first = min((e.start for e in device), default=0.0)
        last = max((e.end for e in device), default=0.0)
        to_ipu = sum(e.duration for e in events if e.kind == "host" and e.end <= first)
        to_host = sum(e.duration for e in events if e.kind == "host" and e.start >= last)
        return to_ipu, self._plan.call_seconds - to_ipu - to_host, to_host

    def _latency(self, seconds: float) -> tuple[float, float, float]:
        self._require_compiled()
        return (seconds, seconds, seconds) if self._calls else (0.0, 0.0, 0.0)

    def getHostIpuLatency(self):
        """(min, max, avg) simulated seconds to stream a call's inputs to the IPU."""
        return self._latency(self._phases()[0] if self._plan else 0.0)

    def getComputeLatency(self):
        """(min, max, avg) simulated seconds the IPUs compute in a call."""
        return self._latency(self._phases()[1] if self._plan else 0.0)

    def getIpuHostLatency(self):
        return self._latency(self._phases()[2] if self._plan else 0.0)

    def getLatency(self):
        """(min, max, avg) simulated seconds of a whole call, inputs to outputs."""
        return self._latency(self._plan.call_seconds if self._plan else 0.0)

    def getPerfCounters(self) -> dict:
        """Simulated timestamps (seconds) of the last call, as [input index][iteration] lists."""
        if self._plan is None or not self._calls:
            return {k: [[]] for k in ("input", "input_complete", "output", "output_complete")}
        to_ipu, compute, to_host = self._phases()
        t0 = self._last_call_start
        inputs = max(1, sum(isinstance(t, torch.Tensor) for t in tree_flatten(self._example)[0]))
        stamps = {"input": t0, "input_complete": t0 + to_ipu, "output": t0 + to_ipu + compute,
                  "output_complete": t0 + self._plan.call_seconds}
        return {k: [[v] for _ in range(inputs)] for k, v in stamps.items()}

    def cycleCount(self) -> int:
        """Simulated IPU cycles of the last call (needs opts.logCycleCount(True))."""
        if not self._options.log_cycle_count:
            raise Error("cycle count logging is disabled: set opts.logCycleCount(True) before "
                        "wrapping the model")
        if not self._calls:
            raise Error("run the model at least once before asking for its cycle count")
        return self._plan.cycles_per_call

    def compilationTime(self) -> datetime.timedelta:
        """Host wall-clock time the simulated compilation took."""
        self._require_compiled()
        return datetime.timedelta(seconds=self._compile_seconds)
