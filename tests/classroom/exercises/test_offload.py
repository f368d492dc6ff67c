"""Lesson 8's exercises: fitting 1.3B parameters takes both switches, whichever way it is set."""
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.classroom.exercises import offload
from tests.classroom.exercises.standard import standard_tests

test_solutions_pass, test_mistakes_get_their_feedback = standard_tests(offload)


def test_fitting_13b_parameters_takes_both_switches():
    assert not offload.make_it_fit.check(offload=False, half=False)
    assert offload.make_it_fit.check(offload=True, half=True)


def test_offloading_the_optimizer_with_more_accumulation_also_fits():
    opts = poptorch.Options()
    opts.Training.gradientAccumulation(64)
    opts.TensorLocations.setOptimizerLocation(
        poptorch.TensorLocationSettings().useOnChipStorage(False))
    assert offload.offload_options.check(opts)
    assert opts.Training.gradient_accumulation == 64  # the check compiles a copy


def test_the_planned_model_is_float16():
    assert all(p.dtype == torch.float16 for p in offload._half_model().parameters())
