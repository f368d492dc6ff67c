"""Exercises of lesson 12: custom operations (a custom loss, a loop on the device)."""
from ipu_tutorials.classroom.exercises import custom_ops
from tests.classroom.exercises.standard import standard_tests

test_solutions_pass, test_mistakes_get_their_feedback = standard_tests(custom_ops)
