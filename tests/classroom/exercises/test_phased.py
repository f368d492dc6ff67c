"""Lesson 6's exercises accept every correct plan and refuse trivial answers."""
from ipu_tutorials import poptorch
from ipu_tutorials.classroom.exercises import phased
from tests.classroom.exercises.standard import standard_tests

test_solutions_pass, test_mistakes_get_their_feedback = standard_tests(phased)


def parallel_phases(name_ipus: bool):
    """8 parallel phases of 2 stages, even phases on IPUs 0 and 2, odd ones on 1 and 3."""
    def stage(p, i):
        stage = poptorch.Stage(f"chunk{2 * p + i}")
        return stage.ipu(2 * i + p % 2) if name_ipus else stage
    return poptorch.ParallelPhasedExecution(
        *[poptorch.Phase(stage(p, 0), stage(p, 1)) for p in range(8)])


def test_parallel_phases_on_alternating_ipu_pairs_are_accepted_too():
    feedback = phased.write_the_phases.check(parallel_phases(name_ipus=True))
    assert feedback.correct, feedback.message
    assert "fits on 4 IPU(s)" in feedback.message


def test_phases_that_name_no_ipu_are_refused_though_the_simulator_places_them():
    # was wrong: "Correct!" under the simulator's warning; PopTorch has no default IPU for them
    feedback = phased.write_the_phases.check(parallel_phases(name_ipus=False))
    assert not feedback.correct
    assert "name no IPU" in feedback.message and "runs without warnings" in feedback.message


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
