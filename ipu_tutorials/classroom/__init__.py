"""Classroom tools: explorers built on the simulator, and exercises that check themselves."""
from .exercises import Exercise
from .memory import memory_planner, plan_memory_for
from .pipeline import pipeline_explorer, simulate_pipeline
from .precision import precision_explorer, survival

__all__ = ["Exercise", "memory_planner", "pipeline_explorer", "plan_memory_for",
           "precision_explorer", "simulate_pipeline", "survival"]
