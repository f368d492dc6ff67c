"""Exercises that check themselves, one module per lesson (`blocks`, `pipelining`, ...)."""
from .base import Exercise, Feedback

__all__ = ["Exercise", "Feedback"]
