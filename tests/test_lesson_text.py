"""What every lesson source says: its time, its references, the GPU bridge, simulator extras
marked where they first appear, and nothing a learner cannot look up."""
import os
import re

import pytest

import build_notebooks
from ipu_tutorials.course.lessons import study_minutes

LESSONS = sorted(f for f in os.listdir(build_notebooks.SOURCES) if f.endswith(".py"))
# Names real PopTorch does not have (docs/differences.md); each lesson marks its first use.
SIMULATOR_EXTRAS = re.compile(
    r"\.plan\b|\.report\(|OutOfMemoryError|partials_type|enable_stochastic_rounding|"
    r"execution_strategy|TensorLocations\.location\(|executable_cache_dir|register_custom_op|"
    r"meanAccumulationAndReplicationReductionStrategy\b(?!\()")


def source(lesson: str) -> str:
    with open(os.path.join(build_notebooks.SOURCES, lesson), encoding="utf-8") as handle:
        return handle.read()


def code_lines(text: str):
    """The lesson's code lines, in order: not Markdown comments, not exercise solutions."""
    text = re.sub(r"### BEGIN SOLUTION.*?### END SOLUTION", "", text, flags=re.S)
    return [line for line in text.splitlines() if line.strip() and not line.startswith("#")]


@pytest.mark.parametrize("lesson", LESSONS)
def test_the_lesson_states_the_time_the_course_map_computes(lesson):
    path = os.path.join(build_notebooks.SOURCES, lesson)
    stated = re.search(r"\*\*Time:\*\* about (\d+) minutes\.", source(lesson))
    assert stated, f"{lesson}: no '**Time:** about N minutes.' line"
    assert int(stated.group(1)) == study_minutes(path), \
        f"{lesson}: the stated time is not lessons.study_minutes ({study_minutes(path)})"


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


@pytest.mark.parametrize("lesson", LESSONS)
def test_the_first_use_of_each_simulator_extra_is_marked(lesson):
    seen = set()
    for line in code_lines(source(lesson)):
        for name in set(SIMULATOR_EXTRAS.findall(line)) - seen:
            seen.add(name)
            assert "# simulator extra" in line or "# simulator extras" in line, \
                f"{lesson}: first use of {name!r} is not marked: {line.strip()}"


def test_lesson_one_explains_the_simulator_extra_convention():
    assert "**Simulator extras.**" in source(LESSONS[0])
