"""Classroom tools: explorers built on the simulator, and exercises that check themselves."""
from .exercises import Exercise
from .explorers import (data_loading_explorer, memory_planner, pipeline_explorer, plan_memory_for,
                        precision_explorer, replication_explorer, simulate_pipeline, survival)

__all__ = ["Exercise", "data_loading_explorer", "memory_planner", "pipeline_explorer",
           "plan_memory_for", "precision_explorer", "replication_explorer", "simulate_pipeline",
           "survival"]
