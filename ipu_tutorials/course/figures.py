"""A lesson's figures: their alt texts, their copies in static/, and the pages that show them
without a kernel (the course website and the offline HTML export).

A figure's alt text is written in the walkthrough's plotting cell, `# alt: what it shows`, with
longer texts carried on comment lines indented under it; one marker per figure, in order. The
build stores it in the output's metadata; a page puts it on the <img>. An explorer's output
carries a static picture beside its widget view, which a page without a widget manager shows.
"""
from __future__ import annotations

import base64
import copy
import html
import os
import re

import nbformat
from nbconvert import HTMLExporter, MarkdownExporter

from .checkout import Checkout
from .notebook_form import WIDGET_VIEW

ALT_MARKER, ALT_CONTINUED = re.compile(r"^# alt:(.*)$"), re.compile(r"^#\s{2,}(\S.*)$")


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


def write_figures(nb: nbformat.NotebookNode, name: str, static: str) -> None:
    """The notebook's figures, explorers' included, as <static>/<name>_<n>.png."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = split_explorer_outputs(cell.outputs)
        else:
            cell.pop("attachments", None)  # the diagrams it shows are static/'s own files
    _, resources = MarkdownExporter().from_notebook_node(
        nb, resources={"output_files_dir": "figures", "unique_key": name})
    for old in os.listdir(static) if os.path.isdir(static) else []:
        if old.startswith(f"{name}_") and old.endswith(".png"):
            os.remove(os.path.join(static, old))
    os.makedirs(static, exist_ok=True)
    for index, (_, data) in enumerate(sorted(resources.get("outputs", {}).items())):
        with open(os.path.join(static, f"{name}_{index}.png"), "wb") as f:
            f.write(data)


def write_html(name: str, directory: str, checkout: Checkout) -> str:
    """Export notebooks/<name>.ipynb to DIR/<name>.html, explorers as their static pictures.

    nbconvert would draw widget views with a widget manager fetched from a CDN, which shows
    nothing offline; the stored picture (summary and figure, inline PNG) needs no network.

    Returns:
        The path of the HTML file.
    """
    nb = nbformat.read(os.path.join(checkout.notebooks, f"{name}.ipynb"), as_version=4)
    body, _ = HTMLExporter(template_name="lab").from_notebook_node(
        figures_with_alt(static_explorers(nb)))
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"{name}.html")
    with open(path, "w", encoding="utf-8") as f:
        f.write(body)
    return path
