"""The generated notebooks are current, executed, deterministic in what nbval checks, and the
learner's version: a setup cell, each exercise's starting code, no solution."""
import copy
import html
import json
import os
import re
import uuid

import nbformat
import pytest

import build_notebooks
from ipu_tutorials.classroom import shown_code

LESSONS = sorted(f for f in os.listdir(build_notebooks.SOURCES) if f.endswith(".py"))
ADDRESS = re.compile(r"0x[0-9a-f]{6,}")
WALL_CLOCK = re.compile(r"\d+(\.\d+)?\s*(s|it)/(it|s)\b|\[\d\d:\d\d<")


def notebook(lesson: str) -> nbformat.NotebookNode:
    name = os.path.splitext(lesson)[0]
    return nbformat.read(os.path.join(build_notebooks.NOTEBOOKS, f"{name}.ipynb"), as_version=4)


def checked_text(nb):
    """Every text output nbval compares."""
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                yield output["text"]
            for key, value in output.get("data", {}).items():
                if key == "text/plain":
                    yield value


def test_every_lesson_exists():
    names = [os.path.splitext(f)[0] for f in LESSONS]
    assert names == [
        "01_poptorch_basics", "02_efficient_data_loading", "03_blocks_and_stages",
        "04_pipelining", "05_sharding", "06_phased_execution", "07_memory_tuning",
        "08_optimizer_offload", "09_half_precision", "10_replication",
        "11_observing_and_profiling", "12_custom_operations", "13_ipuconfig", "14_lightning",
        "15_capstone_pod16", "16_pytorch_engines"]


def test_every_notebook_is_current_with_its_walkthrough():
    problems = [p for lesson in LESSONS for p in build_notebooks.stale(
        os.path.join(build_notebooks.SOURCES, lesson))]
    assert problems == [], "run `python build_notebooks.py` and commit the results"


def test_check_mode_passes_now_and_fails_on_a_stale_notebook(tmp_path, monkeypatch):
    assert build_notebooks.main(["--check"]) == 0
    source = tmp_path / "walkthroughs"
    source.mkdir()
    original = os.path.join(build_notebooks.SOURCES, LESSONS[0])
    (source / LESSONS[0]).write_text(open(original).read() + "\n# %%\nprint('new')\n")
    monkeypatch.setattr(build_notebooks, "SOURCES", str(source))
    assert build_notebooks.main(["--check"]) == 1


def test_no_notebook_shows_older_package_code_and_no_walkthrough_copies_it():
    paths = [os.path.join(build_notebooks.SOURCES, lesson) for lesson in LESSONS]
    built = {path: nbformat.read(os.path.join(build_notebooks.NOTEBOOKS, os.path.basename(path)
                                              .replace(".py", ".ipynb")), as_version=4)
             for path in paths}
    drift = [line for path in paths for line in build_notebooks.drifted(
        path, [(c.cell_type, c.source) for c in build_notebooks.read_source(path).cells],
        [(c.cell_type, c.source) for c in built[path].cells])]
    assert drift == [], "run `python build_notebooks.py LESSON` for each lesson named"
    assert [e for path in paths for e in build_notebooks.code_errors(path)] == []


def test_the_lessons_show_the_package_s_models_instead_of_copies():
    cells = [c.source for lesson in ("01_poptorch_basics", "03_blocks_and_stages")
             for c in notebook(lesson).cells if c.cell_type == "code"]
    for name in ("DigitClassifierWithLoss", "ConvLayer", "Network"):
        definition = shown_code.definition(
            f"ipu_tutorials.tutorial.models.{name}", build_notebooks.ROOT)
        assert sum(definition.source in cell for cell in cells) == 1, name


def drifted_package(tmp_path, monkeypatch, old: str, new: str) -> None:
    """The builder's repository: a temporary copy whose tutorial/models.py has `old` -> `new`."""
    models = tmp_path / "ipu_tutorials" / "tutorial" / "models.py"
    models.parent.mkdir(parents=True)
    text = open(os.path.join(build_notebooks.ROOT, "ipu_tutorials", "tutorial", "models.py")).read()
    assert text.count(old) == 1
    models.write_text(text.replace(old, new))
    (tmp_path / "pyproject.toml").write_text(
        open(os.path.join(build_notebooks.ROOT, "pyproject.toml")).read())
    monkeypatch.setattr(build_notebooks, "ROOT", str(tmp_path))


def test_check_names_the_lesson_the_definition_and_its_change_when_the_package_drifts(
        tmp_path, monkeypatch, capsys):
    drifted_package(tmp_path, monkeypatch, "self.layer4 = nn.Linear(256, 10)",
                    "self.layer4 = nn.Linear(256, 10, bias=False)")
    capsys.readouterr()
    assert build_notebooks.main(["--check", "03_blocks_and_stages"]) == 1
    line = next(n for n, text in enumerate(open(tmp_path / "ipu_tutorials" / "tutorial" / "models.py"),
                                           1) if "bias=False" in text)
    assert (f"stale: 03_blocks_and_stages: the notebook shows an older "
            f"ipu_tutorials.tutorial.models.Network: ipu_tutorials/tutorial/models.py:{line} has "
            f"`self.layer4 = nn.Linear(256, 10, bias=False)` where the notebook has "
            f"`self.layer4 = nn.Linear(256, 10)`") in capsys.readouterr().err.splitlines()


def test_build_refuses_a_walkthrough_that_copies_the_package_in_one_line(tmp_path, monkeypatch,
                                                                         capsys):
    source = tmp_path / "walkthroughs"
    source.mkdir()
    original = open(os.path.join(build_notebooks.SOURCES, "03_blocks_and_stages.py")).read()
    pasted = shown_code.expand(original, build_notebooks.ROOT)  # the package's code pasted in
    (source / "03_blocks_and_stages.py").write_text(pasted)
    monkeypatch.setattr(build_notebooks, "SOURCES", str(source))
    assert build_notebooks.main(["03_blocks_and_stages"]) == 1
    lines = [f"error: 03_blocks_and_stages: line {line} defines {name} as "
             f"ipu_tutorials.tutorial.models.{name} does: show it with "
             f"`# show: ipu_tutorials.tutorial.models.{name}` instead of a copy"
             for line, name in ((pasted.splitlines().index(f"class {name}(nn.Module):") + 1, name)
                                for name in ("ConvLayer", "Network"))]
    assert capsys.readouterr().err.splitlines() == lines  # and no lesson ran
    assert build_notebooks.main(["--check", "03_blocks_and_stages"]) == 1


def test_build_refuses_a_marker_that_names_nothing_in_one_line(tmp_path, monkeypatch, capsys):
    source = tmp_path / "walkthroughs"
    source.mkdir()
    (source / "99_shown.py").write_text(
        "# %% [markdown]\n# # Lesson 99: Shown\n\n# %%\n# show: ipu_tutorials.tutorial.models.Nope\n")
    monkeypatch.setattr(build_notebooks, "SOURCES", str(source))
    assert build_notebooks.main(["99_shown"]) == 1
    assert capsys.readouterr().err.splitlines()[-1].startswith(
        "error: 99_shown: `# show: ipu_tutorials.tutorial.models.Nope`: ipu_tutorials.tutorial.models "
        "defines no top-level class or function 'Nope'")


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
    assert f'%pip install --quiet "ipu-tutorials{extras} @ git+{build_notebooks.repository()}"' \
        in setup.source


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
    assert installs == [f'install --quiet "ipu-tutorials @ git+{build_notebooks.repository()}"']


def test_notebooks_holds_only_the_notebooks_and_what_nbval_needs():
    """The course website renders the notebooks: no Markdown copy doubles them."""
    names = sorted(os.listdir(build_notebooks.NOTEBOOKS))
    lessons = [os.path.splitext(lesson)[0] + ".ipynb" for lesson in LESSONS]
    assert [n for n in names if not n.startswith(".")] == sorted(lessons + ["sanitize.cfg"])


@pytest.mark.parametrize("lesson", LESSONS)
def test_checked_outputs_hold_no_addresses_or_wall_clock_times(lesson):
    for text in checked_text(notebook(lesson)):
        assert not ADDRESS.search(text), text
        assert not WALL_CLOCK.search(text), text


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


def test_student_writes_the_editions_without_running_a_notebook(tmp_path, monkeypatch):
    monkeypatch.setattr(build_notebooks, "execute", lambda nb: pytest.fail("re-executed"))
    assert build_notebooks.main(["04_pipelining", "--student", str(tmp_path)]) == 0
    assert (tmp_path / "release" / "04_pipelining" / "04_pipelining.ipynb").exists()


@pytest.mark.parametrize("lesson", LESSONS)
def test_static_holds_each_figure_of_the_notebook(lesson):
    """One static/<lesson>_<n>.png per figure output (an explorer's picture counts once)."""
    name = os.path.splitext(lesson)[0]
    count = sum("image/png" in o.get("data", {}) for c in notebook(lesson).cells
                for o in c.get("outputs", []))
    figures = sorted(f for f in os.listdir(build_notebooks.STATIC) if re.fullmatch(
        rf"{name}_\d+\.png", f))
    assert count and figures == sorted(f"{name}_{index}.png" for index in range(count))


def test_prints_split_across_messages_are_joined():
    outputs = [nbformat.v4.new_output("stream", name="stdout", text="a\n"),
               nbformat.v4.new_output("stream", name="stdout", text="b\n"),
               nbformat.v4.new_output("stream", name="stderr", text="c\n"),
               nbformat.v4.new_output("stream", name="stdout", text="d\n")]
    joined = build_notebooks.coalesce_streams(outputs)
    assert [(o["name"], o["text"]) for o in joined] == [("stdout", "a\nb\n"), ("stderr", "c\n"),
                                                         ("stdout", "d\n")]


@pytest.mark.parametrize("lesson", LESSONS)
def test_notebooks_are_stored_as_jupyterlab_saves_them(lesson):
    """No carriage-return frames, the installed kernel's display name, JavaScript numbers in
    the widget state: a save in JupyterLab rewrites nothing (tests/browser checks it live)."""
    nb = notebook(lesson)
    assert nb.metadata["kernelspec"] == build_notebooks.kernelspec()
    build_notebooks.check_savable(nb)
    assert build_notebooks.as_javascript_numbers(copy.deepcopy(nb)) == nb


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_explorer_output_carries_its_static_picture(lesson):
    nb = notebook(lesson)
    explorers = [o for c in nb.cells for o in c.get("outputs", [])
                 if build_notebooks.WIDGET_VIEW in o.get("data", {})]
    assert explorers
    for output in explorers:
        png = output["data"]["image/png"]
        assert f"data:image/png;base64,{png}" in output["data"]["text/html"]
    static = build_notebooks.static_explorers(nb)
    assert "widgets" not in static.metadata
    assert not any(build_notebooks.WIDGET_VIEW in o.get("data", {})
                   for c in static.cells for o in c.get("outputs", []))


def test_carriage_returns_in_a_stream_are_refused():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print()")])
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", name="stderr", text="a 0%\ra 100%\n")]
    with pytest.raises(ValueError, match="carriage returns .* JupyterLab would rewrite them"):
        build_notebooks.check_savable(nb)


def test_whole_floats_become_integers_as_in_javascript():
    assert build_notebooks.as_javascript_numbers({"a": [2.0, 0.25, "2.0", True], "b": 0.0}) == \
        {"a": [2, 0.25, "2.0", True], "b": 0}
    assert type(build_notebooks.as_javascript_numbers({"b": 0.0})["b"]) is int


def test_an_explorer_output_splits_into_its_summary_then_its_figure():
    data = {build_notebooks.WIDGET_VIEW: {"model_id": "m"}, "text/plain": "Explorer: 3 items",
            "text/html": "<b>...</b>", "image/png": "iVBOR"}
    split = build_notebooks.split_explorer_outputs([nbformat.v4.new_output("display_data", data)])
    assert [dict(o["data"]) for o in split] == [{"text/plain": "Explorer: 3 items"},
                                               {"image/png": "iVBOR"}]


def lesson_rows(path: str, notebooks: str) -> dict[str, list[str]]:
    """A page's lesson table under "# The course" (or "## The course"), by the notebook each
    row links to (notebooks: the link's folder as the page writes it)."""
    with open(os.path.join(build_notebooks.ROOT, path), encoding="utf-8") as f:
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
    path = os.path.join(build_notebooks.SOURCES, lesson)
    number, title = build_notebooks.lesson_heading(path)
    row = course_map_rows().get(name)
    assert row, f"docs/course.md has no row linking ../notebooks/{name}.ipynb"
    assert row[0] == f"[{number}. {title}](../notebooks/{name}.ipynb)"
    assert row[2], f"{name}: the explorer column is empty"
    assert row[3] == f"{build_notebooks.study_minutes(path)} min", \
        "run `python build_notebooks.py --times` and copy the times into docs/course.md"


@pytest.mark.parametrize("lesson", LESSONS)
def test_the_readme_lists_every_lesson_with_a_line_and_its_time(lesson):
    name = os.path.splitext(lesson)[0]
    path = os.path.join(build_notebooks.SOURCES, lesson)
    number, title = build_notebooks.lesson_heading(path)
    row = lesson_rows("README.md", "notebooks").get(name)
    assert row, f"README.md's lesson table has no row linking notebooks/{name}.ipynb"
    assert row[0] == f"{number}. [{title}](notebooks/{name}.ipynb)"
    assert row[1], f"{name}: say in a line what the learner does"
    assert row[2] == f"{build_notebooks.study_minutes(path)} min", \
        "run `python build_notebooks.py --times` and copy the times into README.md"


def test_lessons_are_numbered_in_course_order():
    numbers = [build_notebooks.lesson_heading(os.path.join(build_notebooks.SOURCES, lesson))[0]
               for lesson in LESSONS]
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))
    assert [int(lesson[:2]) for lesson in LESSONS] == numbers


def test_cell_ids_are_stable_from_build_to_build():
    path = os.path.join(build_notebooks.SOURCES, LESSONS[0])
    first, second = build_notebooks.read_source(path), build_notebooks.read_source(path)
    assert [c.id for c in first.cells] == [c.id for c in second.cells]
    assert len({c.id for c in first.cells}) == len(first.cells)
    assert [c.id for c in first.cells] == [c.id for c in notebook(LESSONS[0]).cells]


def test_html_pages_carry_the_diagrams_inline():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("![Staircase](../static/diagram_pipeline.png)")]
    source = build_notebooks.inline_static_images(nb).cells[0].source
    assert source.startswith("![Staircase](data:image/png;base64,iVBORw0KGgo")


def test_widget_model_ids_are_stable_from_build_to_build():
    stored = notebook(LESSONS[0])
    state = stored.metadata["widgets"][build_notebooks.WIDGET_STATE]["state"]
    builds = [build_notebooks.stable_widget_ids(with_random_widget_ids(stored, state), "lesson")
              for _ in range(2)]  # two builds: each kernel draws its own random ids
    assert builds[0] == builds[1]
    fresh = builds[0].metadata["widgets"][build_notebooks.WIDGET_STATE]["state"]
    assert len(fresh) == len(state) and not set(fresh) & set(state)
    text = json.dumps(builds[0])
    views = re.findall(r'"model_id": "(\w+)"', text)
    assert views and set(views + re.findall(r"IPY_MODEL_(\w+)", text)) <= set(fresh)


def with_random_widget_ids(nb, state):
    text = json.dumps(nb)
    for model_id in state:
        text = text.replace(model_id, uuid.uuid4().hex)
    return nbformat.from_dict(json.loads(text))


def test_alt_markers_give_each_figure_its_text_in_order():
    source = ("x = 1\n# alt: Two bars: the first\n#   taller than the second.\nplot(x)\n"
              "# a comment that is not alt text\n# alt: A line rising.\nplot(2 * x)\n")
    assert build_notebooks.alt_texts(source) == [
        "Two bars: the first taller than the second.", "A line rising."]
    assert build_notebooks.without_alt_markers(source) == (
        "x = 1\nplot(x)\n# a comment that is not alt text\nplot(2 * x)")


def figure_cell(source: str, figures: int) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    cell.outputs = [nbformat.v4.new_output("display_data", {"image/png": "iVBORw0KGgo=",
                                                            "text/plain": "<Figure>"})
                    for _ in range(figures)]
    return cell


def test_each_figure_carries_its_alt_text_and_the_html_page_shows_it():
    nb = nbformat.v4.new_notebook(cells=[figure_cell("# alt: A line rising.\nplot()", 1)])
    described = build_notebooks.describe_figures(nb, "lesson")
    assert described.cells[0].outputs[0].metadata == {"image/png": {"alt": "A line rising."}}
    page = build_notebooks.figures_with_alt(described).cells[0]
    assert page.outputs[0].data["text/html"].startswith(
        '<img alt="A line rising." src="data:image/png;base64,iVBORw0KGgo=')
    assert page.source == "plot()"  # the page says it as the image's alt, not in the code


def test_a_figure_without_alt_text_stops_the_build():
    nb = nbformat.v4.new_notebook(cells=[figure_cell("# alt: Only one.\nplot(); plot()", 2)])
    with pytest.raises(ValueError, match=r"lesson: cell 0 shows 2 figure\(s\) but has 1 "
                                         r"`# alt:` marker\(s\)"):
        build_notebooks.describe_figures(nb, "lesson")


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_figure_of_every_lesson_has_alt_text(lesson):
    # was wrong: 16 plots showed nbconvert's "No description has been provided for this image"
    for cell in notebook(lesson).cells:
        figures = [o for o in cell.get("outputs", []) if "image/png" in o.get("data", {})]
        texts = [o.metadata["image/png"]["alt"] for o in figures]
        assert texts == build_notebooks.alt_texts(cell.source) and all(texts)


def test_a_page_shows_an_explorers_picture_with_its_figures_alt_text():
    """The stored output stays as the kernel drew it (nbval compares it); a page says the alt."""
    cell = figure_cell("# alt: Bars per IPU.\nexplorer()", 1)
    cell.outputs[0].data["text/html"] = ('<div class="ipu-explorer-static"><b>Planner</b>'
                                         '<img alt="Planner" src="data:image/png;base64,x"/></div>')
    nb = build_notebooks.describe_figures(nbformat.v4.new_notebook(cells=[cell]), "lesson")
    assert 'alt="Planner"' in nb.cells[0].outputs[0].data["text/html"]
    page = build_notebooks.figures_with_alt(nb).cells[0].outputs[0].data["text/html"]
    assert f'<img alt="{html.escape("Bars per IPU.")}"' in page
