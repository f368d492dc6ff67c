"""What every lesson source says: its time, its references, the GPU bridge, the simulator-extra
convention, and nothing a learner cannot look up. (That every line using an extra is marked is
the builder's to check, as the lesson runs: tests/test_build_notebooks.py.)"""
import os
import re

import pytest

import build_notebooks
from ipu_tutorials.course.lessons import study_minutes

LESSONS = sorted(f for f in os.listdir(build_notebooks.SOURCES) if f.endswith(".py"))


def source(lesson: str) -> str:
    with open(os.path.join(build_notebooks.SOURCES, lesson), encoding="utf-8") as handle:
        return handle.read()


@pytest.mark.parametrize("lesson", LESSONS)
def test_the_lesson_states_the_time_the_course_map_computes(lesson):
    path = os.path.join(build_notebooks.SOURCES, lesson)
    stated = re.search(r"\*\*Time:\*\* about (\d+) minutes\.", source(lesson))
    assert stated, f"{lesson}: no '**Time:** about N minutes.' line"
    assert int(stated.group(1)) == study_minutes(path), (
        f"{lesson}: the stated time is not lessons.study_minutes ({study_minutes(path)})")


@pytest.mark.parametrize("lesson", LESSONS)
def test_the_lesson_ends_with_references_a_learner_can_open(lesson):
    text = source(lesson)
    assert "# ## References" in text
    references = text[text.index("# ## References"):]
    assert re.search(r"https://|arXiv:|graphcore/examples", references)
    assert "docs/coming-from-gpus.md" in references


@pytest.mark.parametrize("lesson", LESSONS)
def test_no_planning_jargon_or_moved_readme_sections(lesson):
    text = source(lesson)
    assert not re.search(r"\bseed 0\d\d\b", text, re.I)
    assert not re.search(r"README's|\(README\)", text)


def test_lesson_one_explains_the_simulator_extra_convention():
    assert "**Simulator extras.**" in source(LESSONS[0])
