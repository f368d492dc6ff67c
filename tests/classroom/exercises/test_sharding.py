"""Lesson 5's exercises: the measured speedup comes from the lesson's own configuration."""
from ipu_tutorials import poptorch
from ipu_tutorials.classroom.exercises import sharding
from tests.classroom.exercises.standard import standard_tests

test_solutions_pass, test_mistakes_get_their_feedback = standard_tests(sharding)


def test_the_speedup_check_uses_the_lessons_configuration():
    plans = sharding.lesson_plans()
    assert all(p.spec.device_iterations == 10 and p.spec.gradient_accumulation == 10
               for p in plans.values())
    assert sharding.speedup.check(sharding.measured_speedup())
    assert not sharding.speedup.check(1.0)


def test_any_four_ipu_sharding_with_accumulation_one_is_accepted():
    opts = poptorch.Options().deviceIterations(10)
    opts.setExecutionStrategy(poptorch.ShardedExecution("B1", "B2", "B3", "B4"))
    assert sharding.sharded_options.check(opts)
