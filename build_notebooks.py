"""Build the lessons: walkthroughs/*.py -> executed notebooks/*.ipynb and their static/ figures.

    python build_notebooks.py                 # build every lesson
    python build_notebooks.py 04_pipelining   # build some (names or paths)
    python build_notebooks.py --check         # fail if a notebook is stale against its source
    python build_notebooks.py --student DIR   # only write the classroom editions (not re-run)
    python build_notebooks.py --html DIR      # export the built notebooks to HTML that works offline
    python build_notebooks.py --times         # each lesson's estimated study time, for docs/course.md
    python build_notebooks.py --diagrams      # the conceptual diagrams, static/diagram_*.png

Sources are jupytext "percent" files. A code line `# show: ipu_tutorials.module.Name` shows the
package's own class or function there (ipu_tutorials/classroom/shown_code.py), so lesson code
the package also needs is written once; `--check` names a notebook that shows an older version,
and the build refuses a walkthrough that copies the package's code. A notebook is the learner's
version of its lesson: a setup cell after the title (installs the package where it is missing),
and each exercise's answer cell holding its starting code (ipu_tutorials/classroom/editions.py),
so every check says "Not yet" until the learner answers; the instructor's edition, with the
solutions, is made from it by the editions tool. Each notebook is executed top to bottom with
nbclient (widget state stored, so explorers render when opened) and written with its outputs,
which nbval later compares against a fresh run; its figures are also written to static/ (the
README shows one). The course website (mkdocs.yml) renders the stored notebooks. Notebooks are
stored in the form JupyterLab saves them in (its kernel display name, no carriage-return
progress frames), so opening, trusting and saving one in JupyterLab leaves the repository
unchanged.
"""
from __future__ import annotations

import argparse
import base64
import copy
import hashlib
import html
import json
import os
import re
import sys
import time

import jupytext
import nbformat
from nbclient import NotebookClient
from jupyter_client.kernelspec import KernelSpecManager
from nbconvert import HTMLExporter, MarkdownExporter
from tqdm import tqdm

from ipu_tutorials.classroom.editions import ANSWER, CELL_TIMEOUT, learner_edition
from ipu_tutorials.classroom.shown_code import LessonCodeError, drift, expand, hand_copies, shown

ROOT = os.path.dirname(os.path.abspath(__file__))
SOURCES, NOTEBOOKS, STATIC = (os.path.join(ROOT, d) for d in ("walkthroughs", "notebooks", "static"))
TIMEOUT = CELL_TIMEOUT  # seconds per cell
KERNEL = "python3"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
# A figure's alt text, written in the walkthrough's plotting cell: "# alt: what it shows", with
# longer texts carried on comment lines indented under it; one marker per figure, in order.
ALT_MARKER, ALT_CONTINUED = re.compile(r"^# alt:(.*)$"), re.compile(r"^#\s{2,}(\S.*)$")
# The study-time estimate of the course map (assumptions, not measurements): technical prose
# read at 120 words a minute, a minute to run and read each code cell, 8 minutes per exercise.
WORDS_PER_MINUTE, MINUTES_PER_CELL, MINUTES_PER_EXERCISE = 120, 1, 8
# The extra a lesson needs where it runs outside this repository, by what its code imports.
EXTRAS = {"huggingface": r"^\s*(from|import) (transformers|ipu_tutorials\.optimum)\b",
          "lightning": r"^\s*(from|import) (lightning|ipu_tutorials\.lightning)\b"}


def source_hash(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def repository() -> str:
    """The project's repository, as pyproject.toml's [project.urls] names it."""
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        return re.search(r'^Repository = "([^"]+)"', f.read(), re.M).group(1)


def setup_cell(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The lesson's first code cell: outside this repository (Colab, Binder) it installs the
    package with the extras the lesson imports; where the package is installed it does nothing,
    silently and offline."""
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    extras = [extra for extra, pattern in EXTRAS.items() if re.search(pattern, code, re.M)]
    package = f"ipu-tutorials{'[' + ','.join(extras) + ']' if extras else ''}"
    cell = nbformat.v4.new_code_cell(
        "# Setup: install the course's package where it is missing (Colab, Binder); else do nothing.\n"
        "import importlib.util\n\n"
        'if importlib.util.find_spec("ipu_tutorials") is None:\n'
        f'    %pip install --quiet "{package} @ git+{repository()}"')
    cell.metadata["tags"] = ["setup"]
    return cell


def read_source(path: str) -> nbformat.NotebookNode:
    """The walkthrough as the learner's unexecuted notebook: its title, the setup cell, then
    the lesson, each answer cell holding its exercise's starting code."""
    name = os.path.splitext(os.path.basename(path))[0]
    nb = jupytext.read(path, fmt="py:percent")
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = expand(cell.source, ROOT)
    nb = learner_edition(nb)
    nb.cells.insert(1, setup_cell(nb))
    for index, cell in enumerate(nb.cells):
        # Stable cell ids (nbformat's are random), so a rebuild changes only what changed.
        cell.id = hashlib.sha256(f"{name}:{index}:{cell.source}".encode()).hexdigest()[:8]
    nb.metadata["kernelspec"] = kernelspec()
    nb.metadata["ipu_tutorials"] = {
        "source": f"walkthroughs/{name}.py", "source_sha256": source_hash(path),
        "generated": f"by build_notebooks.py: edit walkthroughs/{name}.py (and the exercises' "
                     f"starting code and solutions in ipu_tutorials/classroom/exercises/), "
                     f"then run `python build_notebooks.py {name}`"}
    nb.metadata.pop("jupytext", None)
    return nb


def kernelspec() -> dict:
    """The kernelspec metadata JupyterLab writes on save: the installed kernel's display name
    ("Python 3 (ipykernel)"), so that saving does not rewrite it."""
    spec = KernelSpecManager().get_kernel_spec(KERNEL)
    return {"display_name": spec.display_name, "language": spec.language, "name": KERNEL}


def alt_lines(source: str) -> list[tuple[int, str, bool]]:
    """The lines of a code cell's `# alt:` markers: (line number, text, starts a marker)."""
    found: list[tuple[int, str, bool]] = []
    for number, line in enumerate(source.splitlines()):
        marker, continued = ALT_MARKER.match(line), ALT_CONTINUED.match(line)
        if marker:
            found.append((number, marker.group(1).strip(), True))
        elif continued and found and found[-1][0] == number - 1:
            found.append((number, continued.group(1).strip(), False))
    return found


def alt_texts(source: str) -> list[str]:
    """The alt texts that a code cell's `# alt:` markers give its figures, in order."""
    texts: list[str] = []
    for _, text, starts in alt_lines(source):
        if starts:
            texts.append(text)
        else:
            texts[-1] += " " + text
    return texts


def without_alt_markers(source: str) -> str:
    """The code without its `# alt:` comments (a web page shows them as the images' alt)."""
    markers = {number for number, _, _ in alt_lines(source)}
    return "\n".join(line for number, line in enumerate(source.splitlines())
                     if number not in markers)


def describe_figures(nb: nbformat.NotebookNode, name: str) -> nbformat.NotebookNode:
    """Each figure's alt text, from its cell's markers, in the output's metadata (`alt` of its
    image/png). The outputs themselves stay as the kernel made them, for nbval to compare.

    Raises:
        ValueError: a cell shows more or fewer figures than it has `# alt:` markers.
    """
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        figures = [o for o in cell.outputs if "image/png" in o.get("data", {})]
        texts = alt_texts(cell.source)
        if len(texts) != len(figures) or not all(texts):
            raise ValueError(
                f"{name}: cell {index} shows {len(figures)} figure(s) but has {len(texts)} "
                f"`# alt:` marker(s): write one `# alt: what the figure shows` comment per "
                f"figure, in order, in walkthroughs/{name}.py")
        for output, text in zip(figures, texts):
            output.setdefault("metadata", {}).setdefault("image/png", {})["alt"] = text
    return nb


def figures_with_alt(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy for a web page: each figure's alt text on its <img> (a plain figure gets an HTML
    form, which a page prefers: nbconvert reads no alt text from metadata), and code without
    its `# alt:` comments."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = without_alt_markers(cell.source)
        for output in cell.get("outputs", []):
            data, alt = output.get("data", {}), output.get("metadata", {}).get("image/png", {})
            if "image/png" not in data or not alt.get("alt"):
                continue
            text = html.escape(alt["alt"])
            if "text/html" in data:  # an explorer's stored picture: its figure's alt
                data["text/html"] = re.sub(r'<img alt="[^"]*"', f'<img alt="{text}"',
                                           data["text/html"], count=1)
            else:
                inline = f"data:image/png;base64,{data['image/png']}"
                data["text/html"] = f'<img alt="{text}" src="{inline}"/>'
    return nb


def execute(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    client = NotebookClient(nb, timeout=TIMEOUT, kernel_name=KERNEL, store_widget_state=True,
                            resources={"metadata": {"path": NOTEBOOKS}})
    client.execute()
    for cell in nb.cells:
        cell.metadata.pop("execution", None)  # timestamps would make every build differ
        if cell.cell_type == "code":
            cell.outputs = coalesce_streams(cell.outputs)
    check_savable(nb)
    return as_javascript_numbers(nb)


def stable_widget_ids(nb: nbformat.NotebookNode, name: str) -> nbformat.NotebookNode:
    """The notebook with every widget model id drawn from the lesson's name and the model's
    place (ipywidgets draws random ones), so a rebuild rewrites no id that JupyterLab keeps."""
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    order = widgets_in_display_order(nb, state)
    text = json.dumps(nb)
    for index, model_id in enumerate(order):
        fresh = hashlib.sha256(f"{name}:widget:{index}".encode()).hexdigest()[:32]
        text = text.replace(model_id, fresh)
    return nbformat.from_dict(json.loads(text))


def widgets_in_display_order(nb: nbformat.NotebookNode, state: dict) -> list[str]:
    """Model ids as the outputs reach them (each view, then the models it refers to), then
    any model no output reaches."""
    order: list[str] = []

    def visit(model_id: str) -> None:
        if model_id in state and model_id not in order:
            order.append(model_id)
            refs = json.dumps(state[model_id], sort_keys=True)
            for ref in re.findall(r"IPY_MODEL_(\w+)", refs):
                visit(ref)

    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if WIDGET_VIEW in output.get("data", {}):
                visit(output["data"][WIDGET_VIEW]["model_id"])
    return order + [model_id for model_id in state if model_id not in order]


def as_javascript_numbers(value):
    """Whole floats as integers (2.0 -> 2), as JupyterLab's JSON writes them when it saves the
    widget state again; nothing else changes."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        for key, item in value.items():
            value[key] = as_javascript_numbers(item)
    elif isinstance(value, list):
        value[:] = [as_javascript_numbers(item) for item in value]
    return value


def check_savable(nb: nbformat.NotebookNode) -> None:
    """Raise if an output would be rewritten by JupyterLab's first save.

    Raises:
        ValueError: a stream holds carriage returns (progress-bar frames), which JupyterLab
            collapses when it loads the notebook.
    """
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream" and "\r" in output["text"]:
                raise ValueError(
                    f"cell {index} prints carriage returns ({output['text'][:60]!r}...): JupyterLab "
                    f"would rewrite them on save. Turn the progress bar off in the walkthrough "
                    f"(progress=False, showCompilationProgressBar(False)) or print whole lines.")


def coalesce_streams(outputs: list) -> list:
    """Join neighbouring stream outputs of the same name: how prints are split into messages
    depends on timing, what they say does not."""
    joined: list = []
    for output in outputs:
        previous = joined[-1] if joined else None
        if (output.get("output_type") == "stream" and previous is not None
                and previous.get("output_type") == "stream" and previous["name"] == output["name"]):
            previous["text"] += output["text"]
        else:
            joined.append(output)
    return joined


def static_explorers(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy with every widget view replaced by the static picture stored beside it, and no
    widget state: what a page without a kernel or a widget manager can show."""
    nb = copy.deepcopy(nb)
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            output.get("data", {}).pop(WIDGET_VIEW, None)
    return nb


def split_explorer_outputs(outputs: list) -> list:
    """One form per output: an explorer's summary as text, then its figure (a figure of its own)."""
    split = []
    for output in outputs:
        data = output.get("data", {})
        if WIDGET_VIEW in data and "image/png" in data:
            split.append(nbformat.v4.new_output("display_data", {"text/plain": data["text/plain"]}))
            split.append(nbformat.v4.new_output("display_data", {"image/png": data["image/png"]}))
        else:
            split.append(output)
    return split


def write_figures(nb: nbformat.NotebookNode, name: str) -> None:
    """The notebook's figures, explorers' included, as static/<name>_<n>.png."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = split_explorer_outputs(cell.outputs)
    _, resources = MarkdownExporter().from_notebook_node(
        nb, resources={"output_files_dir": "figures", "unique_key": name})
    for old in os.listdir(STATIC) if os.path.isdir(STATIC) else []:
        if old.startswith(f"{name}_") and old.endswith(".png"):
            os.remove(os.path.join(STATIC, old))
    os.makedirs(STATIC, exist_ok=True)
    for index, (_, data) in enumerate(sorted(resources.get("outputs", {}).items())):
        figure = f"{name}_{index}.png"
        with open(os.path.join(STATIC, figure), "wb") as f:
            f.write(data)


def inline_static_images(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Markdown images from static/ (the diagrams) as data URIs, so an HTML page shows them
    wherever it is written, offline."""
    def data_uri(match: re.Match) -> str:
        with open(os.path.join(STATIC, match.group(2)), "rb") as f:
            return f"{match.group(1)}(data:image/png;base64,{base64.b64encode(f.read()).decode()})"

    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = re.sub(r"(!\[[^\]]*\])\(\.\./static/([^)]+\.png)\)", data_uri, cell.source)
    return nb


def write_html(name: str, directory: str) -> str:
    """Export notebooks/<name>.ipynb to DIR/<name>.html, explorers as their static pictures.

    nbconvert would draw widget views with a widget manager fetched from a CDN, which shows
    nothing offline; the stored picture (summary and figure, inline PNG) needs no network.

    Returns:
        The path of the HTML file.
    """
    nb = nbformat.read(os.path.join(NOTEBOOKS, f"{name}.ipynb"), as_version=4)
    body, _ = HTMLExporter(template_name="lab").from_notebook_node(
        inline_static_images(figures_with_alt(static_explorers(nb))))
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"{name}.html")
    with open(path, "w", encoding="utf-8") as f:
        f.write(body)
    return path


def code_errors(path: str) -> list[str]:
    """What keeps the walkthrough's code from being written once: a `# show:` line naming
    nothing, or a definition that copies the package's instead of showing it."""
    name = os.path.splitext(os.path.basename(path))[0]
    try:
        read_source(path)
    except LessonCodeError as error:
        return [f"{name}: {error}"]
    with open(path, encoding="utf-8") as f:
        return hand_copies(name, f.read(), ROOT)


def build(path: str) -> float:
    name = os.path.splitext(os.path.basename(path))[0]
    started = time.perf_counter()
    nb = describe_figures(stable_widget_ids(execute(read_source(path)), name), name)
    nbformat.write(nb, os.path.join(NOTEBOOKS, f"{name}.ipynb"))
    write_figures(nb, name)
    return time.perf_counter() - started


def stale(path: str) -> list[str]:
    """Why the built files of one walkthrough are out of date ([] when they are current)."""
    name = os.path.splitext(os.path.basename(path))[0]
    notebook = os.path.join(NOTEBOOKS, f"{name}.ipynb")
    if not os.path.exists(notebook):
        return [f"{name}.ipynb is missing"]
    built = nbformat.read(notebook, as_version=4)
    problems = []
    if built.metadata.get("ipu_tutorials", {}).get("source_sha256") != source_hash(path):
        problems.append(f"{name}.ipynb was built from an older walkthroughs/{name}.py")
    expected = [(c.cell_type, c.source) for c in read_source(path).cells]
    cells = [(c.cell_type, c.source) for c in built.cells]
    if cells != expected:
        problems += drifted(path, expected, cells) or [
            f"{name}.ipynb cells differ from walkthroughs/{name}.py (edited by hand?)"]
    if any(c.cell_type == "code" and c.execution_count is None and c.source.strip()
           for c in built.cells):
        problems.append(f"{name}.ipynb has unexecuted cells: nbval would check nothing there")
    return problems


def drifted(path: str, expected: list, cells: list) -> list[str]:
    """A line for each cell that shows the package's code as it was when the notebook was
    built, naming the definition and its first changed line."""
    name = os.path.splitext(os.path.basename(path))[0]
    with open(path, encoding="utf-8") as f:
        names = shown(f.read())
    if not names or len(cells) != len(expected):
        return []
    lines = (drift(name, names, want, have, ROOT) for (_, want), (_, have) in zip(expected, cells)
             if want != have)
    return [line for line in lines if line]


def lesson_heading(path: str) -> tuple[int, str]:
    """The lesson's number and title, from its "# Lesson N: Title" heading."""
    nb = jupytext.read(path, fmt="py:percent")
    match = re.search(r"^# Lesson (\d+): (.+)$", nb.cells[0].source, re.M)
    if not match:
        raise ValueError(f"{path} does not open with a '# Lesson N: Title' heading")
    return int(match.group(1)), match.group(2).strip()


def study_minutes(path: str) -> int:
    """How long a learner needs for the lesson, rounded up to 5 minutes: reading, running
    each cell and doing each exercise, at the rates WORDS_PER_MINUTE and the like assume."""
    nb = jupytext.read(path, fmt="py:percent")
    words = sum(len(re.sub(r"<!--.*?-->", "", c.source, flags=re.S).split())  # not the
                for c in nb.cells if c.cell_type == "markdown")  # invisible claim marks
    cells = sum(1 for c in nb.cells if c.cell_type == "code"
                and ANSWER not in c.metadata.get("tags", []))
    exercises = sum(len(re.findall(r"^### Exercise", c.source, re.M)) for c in nb.cells)
    minutes = words / WORDS_PER_MINUTE + cells * MINUTES_PER_CELL + exercises * MINUTES_PER_EXERCISE
    return 5 * -(-int(round(minutes)) // 5)


def sources(names: list[str]) -> list[str]:
    everything = sorted(os.path.join(SOURCES, f) for f in os.listdir(SOURCES) if f.endswith(".py"))
    if not names:
        return everything
    chosen = []
    for name in names:
        stem = os.path.splitext(os.path.basename(name))[0]
        matches = [p for p in everything if os.path.basename(p).startswith(stem)]
        if not matches:
            known = ", ".join(os.path.splitext(os.path.basename(p))[0] for p in everything)
            raise SystemExit(f"no walkthrough named {name!r}; known: {known}")
        chosen += matches
    return chosen


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="lessons to build (default: all)")
    parser.add_argument("--check", action="store_true",
                        help="only check that every notebook is current; exit 1 if not")
    parser.add_argument("--student", metavar="DIR",
                        help="only write the student and instructor editions of the stored "
                             "notebooks into DIR (see ipu_tutorials/classroom/editions.py)")
    parser.add_argument("--html", metavar="DIR",
                        help="only export the built notebooks to offline HTML pages in DIR")
    parser.add_argument("--times", action="store_true",
                        help="only print each lesson's estimated study time")
    parser.add_argument("--diagrams", action="store_true",
                        help="only draw the conceptual diagrams into static/diagram_*.png")
    args = parser.parse_args(argv)
    if args.diagrams:
        from ipu_tutorials.classroom.diagrams import write_diagrams
        print("\n".join(write_diagrams(STATIC)))
        return 0
    paths = sources(args.names)
    if args.times:
        for path in paths:
            number, title = lesson_heading(path)
            print(f"{number}. {title}: {study_minutes(path)} min")
        return 0
    if args.student:
        from ipu_tutorials.classroom.editions import main as editions
        return editions([*args.names, "--out", args.student])
    if args.html:
        for path in paths:
            print(write_html(os.path.splitext(os.path.basename(path))[0], args.html))
        return 0
    errors = [error for path in paths for error in code_errors(path)]
    for error in errors:  # before any lesson runs, one line each
        print(f"error: {error}", file=sys.stderr)
    if errors:
        return 1
    if args.check:
        problems = [p for path in paths for p in stale(path)]
        for problem in problems:
            print(f"stale: {problem}", file=sys.stderr)
        if problems:
            print("Run `python build_notebooks.py` and commit the results.", file=sys.stderr)
        return 1 if problems else 0
    os.makedirs(NOTEBOOKS, exist_ok=True)
    for path in tqdm(paths, desc="Building lessons", unit="notebook"):
        seconds = build(path)
        tqdm.write(f"{os.path.basename(path)}: executed in {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
