"""The course's exercise standard, for every exercise module of every lesson.

Each lesson has at least two exercises and at least one where the learner writes code; each
exercise's reference solution passes its own check, and each typical mistake it declares gets
its specific feedback. Answers run as the notebook runs them, in the names the lesson defines
before its exercises (the module's `lesson_namespace()`, when it has one).
"""
import importlib
import pkgutil

import pytest

from ipu_tutorials.classroom import exercises as package
from ipu_tutorials.classroom.exercises.base import Exercise

MODULES = [importlib.import_module(f"{package.__name__}.{info.name}")
           for info in pkgutil.iter_modules(package.__path__) if info.name != "base"]


def exercises_of(module) -> list[Exercise]:
    return [value for value in vars(module).values() if isinstance(value, Exercise)]


def namespace_of(module) -> dict:
    return module.lesson_namespace() if hasattr(module, "lesson_namespace") else {}


EXERCISES = [(module, exercise) for module in MODULES for exercise in exercises_of(module)]
MISTAKES = [(module, exercise, mistake) for module, exercise in EXERCISES
            for mistake in exercise.mistakes]


def short(module) -> str:
    return module.__name__.rsplit(".", 1)[1]


@pytest.mark.parametrize("module", MODULES, ids=short)
def test_every_lesson_has_two_exercises_and_one_where_the_learner_writes_code(module):
    found = exercises_of(module)
    assert len(found) >= 2, f"{short(module)} has {len(found)} exercise(s)"
    assert any(exercise.writes_code for exercise in found), f"{short(module)}: no code exercise"


@pytest.mark.parametrize("module, exercise", EXERCISES,
                         ids=[f"{short(m)}: {e.title}" for m, e in EXERCISES])
def test_the_reference_solution_passes_and_a_typical_mistake_is_declared(module, exercise):
    feedback = exercise.run_solution(namespace_of(module))
    assert feedback.correct, feedback.message
    assert exercise.mistakes, f"{exercise.title!r} declares no typical mistake"


@pytest.mark.parametrize("module, exercise, mistake", MISTAKES,
                         ids=[f"{short(m)}: {e.title}: {k.feedback[:30]}" for m, e, k in MISTAKES])
def test_each_typical_mistake_gets_its_specific_feedback(module, exercise, mistake):
    feedback = exercise.run_code(mistake.code, namespace_of(module))
    assert not feedback.correct, f"{mistake.code!r} passed"
    assert mistake.feedback in feedback.message
