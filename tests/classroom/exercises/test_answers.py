"""Every check judged against a class's answers, both ways: right answers written unlike the
reference pass, wrong ones (the trivial ones and the plausible ones) get a "Not yet", and no
answer makes a check raise."""
import importlib

import pytest

from ipu_tutorials.classroom.exercises.base import Exercise, Feedback

from .answers import ANSWERS
from .standard import exercises_of, namespace_of
from .test_every_exercise import MODULES, short

EXERCISES = [(module, exercise) for module in MODULES for exercise in exercises_of(module)]

NAMED = {f"{short(module)}.{name}": (module, exercise) for module, exercise in EXERCISES
         for name, value in vars(module).items() if value is exercise}
RIGHT = [(key, code) for key, given in ANSWERS.items() for code in given["right"]]
WRONG = [(key, code) for key, given in ANSWERS.items() for code in given["wrong"]]


class NoArguments:
    """What `SomeClass()` gives when the learner builds an object of the wrong kind."""


TRIVIAL = {"None": None, "0": 0, "a list": [1, 2, 3], "an empty list": [],
           "an object built with no arguments": NoArguments(), "a string": "answer"}


def run(key: str, code: str) -> Feedback:
    module, exercise = NAMED[key]
    return exercise.run_code(code, namespace_of(module))


def test_every_exercise_has_its_answers():
    assert set(ANSWERS) == set(NAMED), set(ANSWERS) ^ set(NAMED)
    for key, given in ANSWERS.items():
        _, exercise = NAMED[key]
        assert len(given["right"]) >= 2, f"{key}: two right answers written differently"
        plausible = len(given["wrong"]) + len(exercise.mistakes)
        assert plausible >= 3, f"{key}: three plausible wrong answers besides the trivial ones"


@pytest.mark.parametrize("key, code", RIGHT, ids=[f"{k}:{i}" for i, (k, _) in enumerate(RIGHT)])
def test_a_right_answer_written_differently_passes(key, code):
    feedback = run(key, code)
    assert feedback.correct, f"{code!r} -> {feedback!r}"
    assert repr(feedback).startswith("Correct")


@pytest.mark.parametrize("key, code", WRONG, ids=[f"{k}:{i}" for i, (k, _) in enumerate(WRONG)])
def test_a_plausible_wrong_answer_gets_not_yet(key, code):
    feedback = run(key, code)
    assert not feedback.correct, f"{code!r} passed: {feedback!r}"
    assert repr(feedback).startswith("Not yet: ")


@pytest.mark.parametrize("key", sorted(NAMED))
@pytest.mark.parametrize("kind", sorted(TRIVIAL))
def test_a_trivial_answer_gets_not_yet_and_never_a_traceback(key, kind):
    _, exercise = NAMED[key]
    feedback = exercise.check(TRIVIAL[kind])
    assert isinstance(feedback, Feedback) and not feedback.correct, repr(feedback)
    assert repr(feedback).startswith("Not yet: ")


@pytest.mark.parametrize("key", sorted(NAMED))
def test_the_starting_code_unchanged_gets_not_yet(key):
    module, exercise = NAMED[key]
    code = exercise.starting_code or "..."
    feedback = exercise.run_code(code, namespace_of(module))
    assert not feedback.correct and repr(feedback).startswith("Not yet: "), repr(feedback)


def test_an_answer_that_raises_inside_the_check_is_a_not_yet_naming_what_was_expected():
    def checker(answer):
        return Feedback(answer.startswith("x"), "checked")

    exercise = Exercise("t", checker, hint="h", solution="s", expects="a string")
    feedback = exercise.check(3)
    assert not feedback.correct
    assert "expected a string, got int 3" in repr(feedback)
    assert "AttributeError" in repr(feedback)


def test_a_learner_function_that_raises_is_a_not_yet():
    basics = importlib.import_module("ipu_tutorials.classroom.exercises.basics")

    def train_steps(model, loader, steps):
        raise ZeroDivisionError("division by zero")

    feedback = basics.training_loop.check(train_steps)
    assert not feedback.correct and "ZeroDivisionError" in repr(feedback)
