"""Exercises of lesson 9: half precision."""
from ipu_tutorials.classroom.exercises import half_precision
from tests.classroom.exercises.standard import standard_tests

test_solutions_pass, test_mistakes_get_their_feedback = standard_tests(half_precision)
