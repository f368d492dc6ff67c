"""Exercises of lesson 10: replication and data parallelism."""
from ipu_tutorials.classroom.exercises import replication
from tests.classroom.exercises.standard import standard_tests

test_solutions_pass, test_mistakes_get_their_feedback = standard_tests(replication)
