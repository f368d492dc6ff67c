"""Lesson 6's exercises accept every correct plan and refuse trivial answers."""
from ipu_tutorials import poptorch
from ipu_tutorials.classroom.exercises import phased
from tests.classroom.exercises.standard import standard_tests

test_solutions_pass, test_mistakes_get_their_feedback = standard_tests(phased)


def test_parallel_phases_on_alternating_ipu_pairs_are_accepted_too():
    strategy = poptorch.ParallelPhasedExecution(*[
        poptorch.Phase(poptorch.Stage(f"chunk{2 * p}"), poptorch.Stage(f"chunk{2 * p + 1}"))
        for p in range(8)])
    feedback = phased.write_the_phases.check(strategy)
    assert feedback.correct, feedback.message
    assert "fits on 4 IPU(s)" in feedback.message


def test_trivial_answers_are_refused_with_a_reason():
    for answer in (None, 0, poptorch.Options()):
        feedback = phased.write_the_phases.check(answer)
        assert not feedback.correct and "give the strategy object" in feedback.message
    assert not phased.write_the_phases.check(...).correct
    assert "poptorch.Liveness value" in phased.fitting_liveness.check(3).message


def test_the_fastest_fitting_liveness_is_computed_from_the_plans():
    best = phased.fastest_fitting_liveness()
    assert phased.serial_outcome(best.name).fits
    assert not phased.serial_outcome("AlwaysLive").fits
