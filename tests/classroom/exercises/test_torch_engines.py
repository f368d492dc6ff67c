"""Exercises of lesson 16: PyTorch's own engines beside the simulated IPU."""
from ipu_tutorials.classroom.exercises import torch_engines
from tests.classroom.exercises.standard import standard_tests

test_solutions_pass, test_mistakes_get_their_feedback = standard_tests(torch_engines)
