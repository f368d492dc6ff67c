"""The simulated IPU: spec -> capture -> placement -> memory plan and costs -> schedule -> runtime.

Nothing here imports the facade (poptorch), the reports (profiling) or the classroom: data
flows one way, from the RunSpec the facade builds to the Plan and the runtime's results.
"""
from .capture import Graph, capture
from .compile import Plan, compile_plan
from .hardware import BOW, GC2, GC200, IpuSpec, System, default_system, reset_system, set_system
from .memory import IpuMemory, MemoryPlan
from .optimizer import DeviceOptimizer
from .rules import (min_gradient_accumulation, pipeline_depth, recomputes, schedule_kind,
                    stash_depth)
from .schedule import Event, clock_cycles, pipeline_cycles, pipeline_grid
from .spec import RunSpec, StrategyKind
from .timeline import Timeline
from .units import format_bytes

__all__ = ["BOW", "DeviceOptimizer", "Event", "GC2", "GC200", "Graph", "IpuMemory", "IpuSpec",
           "MemoryPlan", "Plan", "RunSpec", "StrategyKind", "System", "Timeline", "capture",
           "clock_cycles", "compile_plan", "default_system", "format_bytes",
           "min_gradient_accumulation", "pipeline_cycles", "pipeline_depth", "pipeline_grid",
           "recomputes", "reset_system", "schedule_kind", "set_system", "stash_depth"]
