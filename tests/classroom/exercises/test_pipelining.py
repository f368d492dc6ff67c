"""Exercises of lesson 4: pipelining."""
from ipu_tutorials.classroom.exercises import pipelining
from tests.classroom.exercises.standard import standard_tests

test_solutions_pass, test_mistakes_get_their_feedback = standard_tests(pipelining)
