"""Exercises of lesson 11: observing and profiling (the NaN hunt and reading a report)."""
from ipu_tutorials.classroom.exercises import observing
from tests.classroom.exercises.standard import standard_tests

test_solutions_pass, test_mistakes_get_their_feedback = standard_tests(observing)
