"""Exercises of lesson 1: porting a model (a frozen branch, the training loop)."""
from ipu_tutorials.classroom.exercises import basics
from tests.classroom.exercises.standard import standard_tests

test_solutions_pass, test_mistakes_get_their_feedback = standard_tests(basics)
