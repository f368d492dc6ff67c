"""Lesson 2's exercises: trivial answers fail, every correct spelling passes."""
import pytest

from ipu_tutorials import poptorch
from ipu_tutorials.classroom.exercises import data_loading as exercises
from tests.classroom.exercises.standard import standard_tests

test_solutions_pass, test_mistakes_get_their_feedback = standard_tests(exercises)


@pytest.mark.parametrize("answer, says", [(None, "not NoneType"), (13, "not int"),
                                          (poptorch.Options(), "replicationFactor is 1")])
def test_trivial_answers_to_the_device_iteration_search_fail(answer, says):
    feedback = exercises.smallest_device_iterations.check(answer)
    assert not feedback and says in feedback.message


def test_the_smallest_count_is_accepted_however_the_options_are_written():
    opts = poptorch.Options().replicationFactor(2).randomSeed(7)
    opts.deviceIterations(13)
    feedback = exercises.smallest_device_iterations.check(opts)
    assert feedback, feedback.message
    assert exercises.host_io_at(opts, 13) < exercises.LIMIT <= exercises.host_io_at(opts, 12)


def test_gradient_accumulation_is_not_the_knob_asked_for():
    opts = poptorch.Options().replicationFactor(2).deviceIterations(13)
    opts.Training.gradientAccumulation(2)
    assert "leave gradientAccumulation at 1" in exercises.smallest_device_iterations.check(opts).message


@pytest.mark.parametrize("answer, says", [(None, "not NoneType"),
                                          (poptorch.Options(), "yours has 1 and 1")])
def test_trivial_answers_to_the_summed_losses_fail(answer, says):
    feedback = exercises.summed_losses.check(answer)
    assert not feedback and says in feedback.message


def test_every_n_gets_the_shape_feedback_and_sum_in_any_spelling_passes():
    every_other = poptorch.Options().deviceIterations(4).replicationFactor(2)
    every_other.outputMode(poptorch.OutputMode.EveryN, 2)
    assert "OutputMode.EveryN returns (4,)" in exercises.summed_losses.check(every_other).message
    summed = poptorch.Options().outputMode(poptorch.OutputMode.Sum).replicationFactor(2)
    summed.deviceIterations(4).randomSeed(1)
    assert exercises.summed_losses.check(summed)
