"""Profiling reports: a JSON summary plus a Chrome trace, saved to a directory and loaded back."""
from __future__ import annotations

import dataclasses
import os

from ..simulator.compile import Plan
from ..simulator.schedule import Event
from ..simulator.timeline import Timeline
from ..simulator.units import format_bytes
from ..support.atomic_io import FileFormatError, read_json, write_json
from . import plots
from .trace import from_trace, to_trace

FORMAT = "ipu-tutorials-report/1"
SUMMARY_FILE, TRACE_FILE = "summary.json", "trace.json"


def _stage_rows(plan: Plan) -> list[dict]:
    return [{"index": s.index, "ipu": s.ipu, "phase": s.phase, "blocks": s.blocks,
             "forward_flops": c.flops, "forward_seconds": c.forward,
             "backward_seconds": c.backward, "send_seconds": c.send}
            for s, c in zip(plan.placement.stages, plan.stage_costs)]


def summarise(plan: Plan, model_name: str, options: dict | None = None) -> dict:
    """The JSON-friendly summary of a compiled plan."""
    c, system = plan.spec, plan.spec.system
    return {
        "format": FORMAT, "model": model_name, "training": c.training,
        "system": {"ipu": system.ipu.name, "version": system.ipu.version,
                   "num_ipus": system.num_ipus, "tiles": system.ipu.tiles,
                   "memory_per_ipu": system.ipu.memory_bytes, "clock_hz": system.ipu.clock_hz},
        "batching": {"micro_batch": c.micro_batch, "device_iterations": c.device_iterations,
                     "gradient_accumulation": c.gradient_accumulation,
                     "replicas": c.pod_replicas,
                     "samples_per_call": c.samples_per_call, "output_mode": c.output_mode},
        "placement": {"strategy": c.strategy.text, "kind": c.strategy.kind.value,
                      "ipus_per_replica": plan.placement.ipus_per_replica,
                      "ipus_acquired": plan.placement.ipus_acquired,
                      "stages": _stage_rows(plan)},
        "edges": [{"from": src, "to": dst, "bytes": size}
                  for (src, dst), size in plan.graph.edges.items()],
        "memory": [m.as_dict() for m in plan.memory.ipus],
        "schedule": {"call_seconds": plan.call_seconds, "cycles_per_call": plan.cycles_per_call,
                     "samples_per_second": plan.samples_per_second,
                     "utilisation": plan.timeline.utilisation(), "grid": plan.grid(),
                     "breakdown": plan.breakdown(), "host_data_seconds": plan.host_data_seconds,
                     "simulated_compile_seconds": plan.compile_seconds},
        "options": options or {},
    }


@dataclasses.dataclass
class Report:
    """What the simulated IPU did with a model: placement, memory per IPU and one call's timeline."""

    summary: dict
    events: list[Event]

    @classmethod
    def from_plan(cls, plan: Plan, model_name: str = "model", options: dict | None = None) -> "Report":
        return cls(summarise(plan, model_name, options), list(plan.timeline.events))

    @property
    def num_ipus(self) -> int:
        return self.summary["placement"]["ipus_per_replica"]

    @property
    def timeline(self) -> Timeline:
        return Timeline(self.events, self.num_ipus)

    @property
    def memory(self) -> list[dict]:
        return self.summary["memory"]

    @property
    def throughput(self) -> float:
        """Simulated samples per second."""
        return self.summary["schedule"]["samples_per_second"]

    def placement_table(self) -> str:
        """Blocks, IPU, memory and utilisation, one row per IPU."""
        util = self.summary["schedule"]["utilisation"]
        rows = [("IPU", "blocks", "memory", "of", "busy")]
        for m in self.memory:
            blocks = [b for s in self.summary["placement"]["stages"] if s["ipu"] == m["ipu"]
                      for b in s["blocks"]]
            rows.append((str(m["ipu"]), ", ".join(blocks), format_bytes(m["total"]),
                         format_bytes(m["capacity"]), f"{util[m['ipu']]:.0%}"))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)

    def save(self, directory: str) -> str:
        """Write summary.json and trace.json into `directory`; returns the directory."""
        os.makedirs(directory, exist_ok=True)
        trace = to_trace(self.events, self.num_ipus, self.memory,
                         f"{self.summary['model']} on simulated IPUs")
        # each file is replaced whole: a crash, a full disk or a second writer never leaves
        # a truncated one; the trace goes first, so a summary always has its trace
        write_json(os.path.join(directory, TRACE_FILE), trace)
        write_json(os.path.join(directory, SUMMARY_FILE), self.summary, indent=2, default=str)
        return directory

    @classmethod
    def load(cls, directory: str) -> "Report":
        """Read a report directory written by save()."""
        paths = [os.path.join(directory, n) for n in (SUMMARY_FILE, TRACE_FILE)]
        missing = [p for p in paths if not os.path.exists(p)]
        if missing:
            raise FileNotFoundError(f"not a report directory: {', '.join(missing)} missing")
        summary = read_json(paths[0], "report summary")
        found = summary.get("format") if isinstance(summary, dict) else type(summary).__name__
        if found != FORMAT:
            raise FileFormatError(f"{paths[0]} is not an ipu-tutorials report (format "
                                  f"{found!r}, expected {FORMAT!r})")
        try:
            events = from_trace(read_json(paths[1], "Chrome trace"))
        except (KeyError, TypeError, AttributeError) as error:
            raise FileFormatError(f"{paths[1]} is not a trace written by Report.save (an event "
                                  f"is malformed: {type(error).__name__} {error}); save it again") from None
        return cls(summary, events)

    def plot_timeline(self, ax=None, **kwargs):
        """Draw one call's schedule, a row per IPU (see plots.plot_timeline)."""
        return plots.plot_timeline(self.events, self.num_ipus, ax=ax, **kwargs)

    def plot_placement(self, ax=None, **kwargs):
        """Draw the blocks inside their IPUs with the activations sent between them."""
        return plots.plot_placement(self.summary["placement"]["stages"], self.summary["edges"],
                                    ax=ax, **kwargs)

    def plot_memory(self, ax=None, **kwargs):
        """Draw each IPU's memory plan against its capacity (see plots.plot_memory)."""
        return plots.plot_memory(self.memory, ax=ax, **kwargs)

    def __repr__(self) -> str:
        s = self.summary
        return (f"Report({s['model']}, {s['placement']['kind']} on "
                f"{s['placement']['ipus_per_replica']} IPU(s), "
                f"{s['schedule']['call_seconds'] * 1e3:.3f} ms per call, "
                f"{s['schedule']['samples_per_second']:,.0f} samples/s)")


def load_report(directory: str) -> Report:
    return Report.load(directory)
