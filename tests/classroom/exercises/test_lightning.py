"""Exercises of lesson 14: PyTorch Lightning on IPUs."""
from ipu_tutorials.classroom.exercises import lightning
from tests.classroom.exercises.standard import standard_tests

test_solutions_pass, test_mistakes_get_their_feedback = standard_tests(lightning)
