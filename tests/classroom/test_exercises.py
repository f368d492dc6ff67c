"""Every exercise's reference solution passes its own check, run as the lesson would run it."""
import types

import pytest

from ipu_tutorials.classroom.exercises import blocks, pipelining, sharding, offload, half_precision
from ipu_tutorials.classroom.exercises.base import Exercise
from ipu_tutorials.tutorial.models import Network


def lesson_namespace(module) -> dict:
    """The names each lesson defines before its exercises and their solutions use."""
    if module is sharding:
        plans = sharding.lesson_plans()
        return {"models": {name: types.SimpleNamespace(plan=plan) for name, plan in plans.items()}}
    if module is offload:
        return {"model": Network(), "exercises": offload}
    return {}


EXERCISES = [(module, name, exercise) for module in (blocks, pipelining, sharding, offload, half_precision)
             for name, exercise in vars(module).items() if isinstance(exercise, Exercise)]


def test_every_lesson_has_exercises():
    assert {module for module, _, _ in EXERCISES} == {blocks, pipelining, sharding, offload, half_precision}


@pytest.mark.parametrize("module, name, exercise", EXERCISES,
                         ids=[f"{m.__name__.rsplit('.', 1)[1]}.{n}" for m, n, _ in EXERCISES])
def test_the_reference_solution_passes_its_own_check(module, name, exercise):
    feedback = exercise.run_solution(lesson_namespace(module))
    assert feedback.correct, feedback.message


def test_the_speedup_check_uses_the_lessons_configuration():
    plans = sharding.lesson_plans()
    assert all(p.spec.device_iterations == 10 and p.spec.gradient_accumulation == 10
               for p in plans.values())
    assert not sharding.speedup.check(1.0)


def test_fitting_13b_parameters_takes_both_switches():
    assert not offload.make_it_fit.check(offload=True, half=False)
    assert not offload.make_it_fit.check(offload=False, half=True)
    assert offload.make_it_fit.check(offload=True, half=True)
