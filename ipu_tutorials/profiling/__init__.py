"""Profiling reports of simulated runs, and the plots drawn from them."""
from .plots import plot_memory, plot_placement, plot_timeline
from .report import Report, load_report

__all__ = ["Report", "load_report", "plot_memory", "plot_placement", "plot_timeline"]
