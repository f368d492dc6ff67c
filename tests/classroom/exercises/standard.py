"""The course's exercise standard as tests for one exercise module: each exercise's reference
solution passes its own check, and each typical mistake it declares gets its feedback.

A module's test file applies it with
`test_solutions_pass, test_mistakes_get_their_feedback = standard_tests(module)`.
Answers run as the notebook runs them, in the names the lesson defines before its exercises
(the module's `lesson_namespace()`, when it has one).
"""
import pytest

from ipu_tutorials.classroom.exercises.base import Exercise


def exercises_of(module) -> list[Exercise]:
    return [value for value in vars(module).values() if isinstance(value, Exercise)]


def namespace_of(module) -> dict:
    return module.lesson_namespace() if hasattr(module, "lesson_namespace") else {}


def standard_tests(module):
    exercises = exercises_of(module)
    mistakes = [(exercise, mistake) for exercise in exercises for mistake in exercise.mistakes]

    @pytest.mark.parametrize("exercise", exercises, ids=[e.title for e in exercises])
    def test_solutions_pass(exercise):
        feedback = exercise.run_solution(namespace_of(module))
        assert feedback.correct, feedback.message
        assert exercise.mistakes, f"{exercise.title!r} declares no typical mistake"

    @pytest.mark.parametrize("exercise, mistake", mistakes,
                             ids=[f"{e.title}: {m.feedback[:30]}" for e, m in mistakes])
    def test_mistakes_get_their_feedback(exercise, mistake):
        feedback = exercise.run_code(mistake.code, namespace_of(module))
        assert not feedback.correct, f"{mistake.code!r} passed"
        assert mistake.feedback in feedback.message

    return test_solutions_pass, test_mistakes_get_their_feedback
