"""Exercises of lesson 3: blocks and stages."""
from ipu_tutorials.classroom.exercises import blocks
from tests.classroom.exercises.standard import standard_tests

test_solutions_pass, test_mistakes_get_their_feedback = standard_tests(blocks)
