"""The simulated IPU: capture -> placement -> memory plan and costs -> schedule -> runtime."""
from .capture import Graph, capture
from .compile import Plan, compile_plan
from .hardware import BOW, GC2, GC200, IpuSpec, System, default_system, reset_system, set_system
from .memory import IpuMemory, MemoryPlan, format_bytes
from .schedule import Event, pipeline_cycles, pipeline_grid
from .timeline import Timeline

__all__ = ["BOW", "Event", "GC2", "GC200", "Graph", "IpuMemory", "IpuSpec", "MemoryPlan", "Plan",
           "System", "Timeline", "capture", "compile_plan", "default_system", "format_bytes",
           "pipeline_cycles", "pipeline_grid", "reset_system", "set_system"]
