"""Explorers: widgets whose every figure comes from compiling a real model in the simulator."""
from .data_loading import data_loading_explorer, plan_call
from .memory import memory_planner, plan_memory_for
from .pipeline import pipeline_explorer, simulate_pipeline
from .precision import precision_explorer, survival
from .replication import pod_split, replication_explorer

__all__ = ["data_loading_explorer", "memory_planner", "pipeline_explorer", "plan_call",
           "plan_memory_for", "pod_split", "precision_explorer", "replication_explorer",
           "simulate_pipeline", "survival"]
