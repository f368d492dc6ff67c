"""The course's exercise standard, for every exercise module of every lesson.

Each lesson has at least two exercises and at least one where the learner writes code; each
module's own test file (tests/classroom/exercises/test_<module>.py) applies the rest of the
standard (standard.py): reference solutions pass, typical mistakes get their feedback.
"""
import importlib
import pathlib
import pkgutil

import pytest

from ipu_tutorials.classroom import exercises as package
from tests.classroom.exercises.standard import exercises_of

MODULES = [importlib.import_module(f"{package.__name__}.{info.name}")
           for info in pkgutil.iter_modules(package.__path__) if info.name != "base"]


def short(module) -> str:
    return module.__name__.rsplit(".", 1)[1]


@pytest.mark.parametrize("module", MODULES, ids=short)
def test_every_lesson_has_two_exercises_and_one_where_the_learner_writes_code(module):
    found = exercises_of(module)
    assert len(found) >= 2, f"{short(module)} has {len(found)} exercise(s)"
    assert any(exercise.writes_code for exercise in found), f"{short(module)}: no code exercise"


@pytest.mark.parametrize("module", MODULES, ids=short)
def test_every_exercise_module_applies_the_standard(module):
    tests = pathlib.Path(__file__).with_name(f"test_{short(module)}.py")
    assert tests.is_file() and "standard_tests(" in tests.read_text(), (
        f"{tests.name} must apply standard_tests({short(module)})")
