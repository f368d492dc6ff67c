"""Exercises that check themselves, one module per lesson (`lesson1`, `lesson2`, ...)."""
from .base import Exercise, Feedback

__all__ = ["Exercise", "Feedback"]
