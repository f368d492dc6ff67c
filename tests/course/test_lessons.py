"""The lessons read from their walkthroughs: every stored notebook is current, the learner's
version (a setup cell, each exercise's starting code, no solution), shows the package's code
instead of copies, and says it is generated; the course map and the README list every lesson
with its study time."""
import os
import re

import nbformat
import pytest

from ipu_tutorials.course import lessons, shown_code

from .stored import CHECKOUT, LESSONS, notebook


def test_every_lesson_exists():
    names = [os.path.splitext(f)[0] for f in LESSONS]
    assert names == [
        "01_poptorch_basics", "02_efficient_data_loading", "03_blocks_and_stages",
        "04_pipelining", "05_sharding", "06_phased_execution", "07_memory_tuning",
        "08_optimizer_offload", "09_half_precision", "10_replication",
        "11_observing_and_profiling", "12_custom_operations", "13_ipuconfig", "14_lightning",
        "15_capstone_pod16", "16_pytorch_engines"]


def test_every_notebook_is_current_with_its_walkthrough():
    problems = [p for lesson in LESSONS for p in lessons.stale(
        os.path.join(CHECKOUT.walkthroughs, lesson), CHECKOUT)]
    assert problems == [], "run `python build_notebooks.py` and commit the results"


def test_no_notebook_shows_older_package_code_and_no_walkthrough_copies_it():
    paths = [os.path.join(CHECKOUT.walkthroughs, lesson) for lesson in LESSONS]
    built = {path: nbformat.read(os.path.join(CHECKOUT.notebooks, os.path.basename(path)
                                              .replace(".py", ".ipynb")), as_version=4)
             for path in paths}
    drift = [line for path in paths for line in lessons.drifted(
        path, [(c.cell_type, c.source) for c in lessons.read_source(path, CHECKOUT).cells],
        [(c.cell_type, c.source) for c in built[path].cells], CHECKOUT)]
    assert drift == [], "run `python build_notebooks.py LESSON` for each lesson named"
    assert [e for path in paths for e in lessons.code_errors(path, CHECKOUT)] == []


def test_the_lessons_show_the_package_s_models_instead_of_copies():
    cells = [c.source for lesson in ("01_poptorch_basics", "03_blocks_and_stages")
             for c in notebook(lesson).cells if c.cell_type == "code"]
    for name in ("DigitClassifierWithLoss", "ConvLayer", "Network"):
        definition = shown_code.definition(
            f"ipu_tutorials.tutorial.models.{name}", CHECKOUT.root)
        assert sum(definition.source in cell for cell in cells) == 1, name


@pytest.mark.parametrize("lesson", LESSONS)
def test_generated_files_say_so_where_a_learner_does_not_trip_over_it(lesson):
    nb = notebook(lesson)
    name = os.path.splitext(lesson)[0]
    assert nb.metadata["ipu_tutorials"]["source"] == f"walkthroughs/{lesson}"
    assert nb.metadata["ipu_tutorials"]["generated"].endswith(
        f"then run `python build_notebooks.py {name}`")
    # was wrong: an HTML comment for the lesson's authors opened every lesson, an empty cell
    assert nb.cells[0].source.startswith("# Lesson ")


@pytest.mark.parametrize("lesson", LESSONS)
def test_the_first_code_cell_installs_the_package_only_where_it_is_missing(lesson):
    setup = notebook(lesson).cells[1]
    assert setup.metadata["tags"] == ["setup"] and setup.execution_count == 1
    assert setup.outputs == []  # silent where the package is installed
    extras = {"13_ipuconfig.py": "[huggingface]", "14_lightning.py": "[lightning]"}.get(lesson, "")
    assert (f'%pip install --quiet "ipu-tutorials{extras} @ git+{lessons.repository(CHECKOUT)}"'
            in setup.source)


def test_the_setup_cell_runs_pip_where_the_package_cannot_be_imported(monkeypatch):
    import importlib.util

    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    installs = []
    shell.register_magic_function(installs.append, "line", "pip")
    source = notebook(LESSONS[0]).cells[1].source
    try:
        assert shell.run_cell(source).success and installs == []  # installed here: nothing
        found = importlib.util.find_spec
        monkeypatch.setattr(importlib.util, "find_spec",
                            lambda name, *a: None if name == "ipu_tutorials" else found(name, *a))
        assert shell.run_cell(source).success
    finally:
        InteractiveShell.clear_instance()
    assert installs == [f'install --quiet "ipu-tutorials @ git+{lessons.repository(CHECKOUT)}"']


def test_notebooks_holds_only_the_notebooks_and_what_nbval_needs():
    """The course website renders the notebooks: no Markdown copy doubles them."""
    names = sorted(os.listdir(CHECKOUT.notebooks))
    lessons = [os.path.splitext(lesson)[0] + ".ipynb" for lesson in LESSONS]
    assert [n for n in names if not n.startswith(".")] == sorted(lessons + ["sanitize.cfg"])


@pytest.mark.parametrize("lesson", LESSONS)
def test_each_lesson_has_objectives_exercises_an_explorer_and_a_summary(lesson):
    nb = notebook(lesson)
    markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    for heading in ("What you will learn", "Prerequisites", "## Summary",
                    "What a real IPU would do"):
        assert heading in markdown
    assert len(re.findall(r"^### Exercise", markdown, re.M)) >= 2
    assert any("explorer" in str(o.get("data", {}).get("text/plain", "")).lower()
               or "planner" in str(o.get("data", {}).get("text/plain", "")).lower()
               for c in nb.cells for o in c.get("outputs", []))
    widgets = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    assert any(w["model_name"] == "OutputModel" and w["state"]["outputs"] for w in widgets.values())


@pytest.mark.parametrize("lesson", LESSONS)
def test_answer_cells_hold_the_starting_code_and_no_solution(lesson):
    nb = notebook(lesson)
    answers = [c for c in nb.cells if "answer" in c.metadata.get("tags", [])]
    assert len(answers) >= 2
    assert not any("BEGIN SOLUTION" in c.source or c.metadata.get("jupyter") for c in nb.cells)


def lesson_rows(path: str, notebooks: str) -> dict[str, list[str]]:
    """A page's lesson table under "# The course" (or "## The course"), by the notebook each
    row links to (notebooks: the link's folder as the page writes it)."""
    with open(os.path.join(CHECKOUT.root, path), encoding="utf-8") as f:
        text = f.read()
    section = re.split(r"^#+ The course\n", text, maxsplit=1, flags=re.M)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        link = re.search(rf"\]\({re.escape(notebooks)}/([\w-]+)\.ipynb\)", line)
        if line.startswith("|") and link:
            rows[link.group(1)] = [cell.strip() for cell in line.strip("|").split("|")]
    return rows


def course_map_rows() -> dict[str, list[str]]:
    """The course map's table (docs/course.md), by the notebook each row links to."""
    return lesson_rows(os.path.join("docs", "course.md"), "../notebooks")


@pytest.mark.parametrize("lesson", LESSONS)
def test_the_course_map_lists_every_lesson_with_its_time_and_explorer(lesson):
    name = os.path.splitext(lesson)[0]
    path = os.path.join(CHECKOUT.walkthroughs, lesson)
    number, title = lessons.lesson_heading(path)
    row = course_map_rows().get(name)
    assert row, f"docs/course.md has no row linking ../notebooks/{name}.ipynb"
    assert row[0] == f"[{number}. {title}](../notebooks/{name}.ipynb)"
    assert row[2], f"{name}: the explorer column is empty"
    assert row[3] == f"{lessons.study_minutes(path)} min", (
        "run `ipu-course times` and copy the times into docs/course.md")


@pytest.mark.parametrize("lesson", LESSONS)
def test_the_readme_lists_every_lesson_with_a_line_and_its_time(lesson):
    name = os.path.splitext(lesson)[0]
    path = os.path.join(CHECKOUT.walkthroughs, lesson)
    number, title = lessons.lesson_heading(path)
    row = lesson_rows("README.md", "notebooks").get(name)
    assert row, f"README.md's lesson table has no row linking notebooks/{name}.ipynb"
    assert row[0] == f"{number}. [{title}](notebooks/{name}.ipynb)"
    assert row[1], f"{name}: say in a line what the learner does"
    assert row[2] == f"{lessons.study_minutes(path)} min", (
        "run `ipu-course times` and copy the times into README.md")


def test_lessons_are_numbered_in_course_order():
    numbers = [lessons.lesson_heading(os.path.join(CHECKOUT.walkthroughs, lesson))[0]
               for lesson in LESSONS]
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))
    assert [int(lesson[:2]) for lesson in LESSONS] == numbers


def test_cell_ids_are_stable_from_build_to_build():
    path = os.path.join(CHECKOUT.walkthroughs, LESSONS[0])
    first, second = lessons.read_source(path, CHECKOUT), lessons.read_source(path, CHECKOUT)
    assert [c.id for c in first.cells] == [c.id for c in second.cells]
    assert len({c.id for c in first.cells}) == len(first.cells)
    assert [c.id for c in first.cells] == [c.id for c in notebook(LESSONS[0]).cells]
