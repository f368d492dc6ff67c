"""A lesson's Markdown made to work wherever its notebook is opened: in JupyterLab serving
notebooks/ (as the README opens it), downloaded on its own, in Colab or on GitHub.

A walkthrough is written inside the checkout, where `../static/diagram.png` and
`../docs/page.md` are beside notebooks/. Outside it those are missing, so the learner's notebook
carries each figure as a cell attachment, and links each other file of the checkout by its
address in the repository (pyproject.toml's [project.urls]); the course website turns those
addresses back into its own pages (docs/_site/hooks.py).
"""
from __future__ import annotations

import base64
import mimetypes
import os
import re

import nbformat

from .checkout import Checkout, CourseError

# A Markdown image or link whose target leaves notebooks/: ![alt](../static/x.png), [text](../docs/y.md#z)
OUTSIDE = re.compile(r"(!?)\[((?:[^\]\\]|\\.)*)\]\(\.\./([^)\s#]+)(#[^)\s]*)?\)")


def repository_file(repository: str, path: str) -> str:
    """The address of a checkout's file in the repository (its default branch)."""
    return f"{repository.rstrip('/')}/blob/main/{path}"


def travelling(cell: nbformat.NotebookNode, checkout: Checkout,
               repository: str) -> nbformat.NotebookNode:
    """The Markdown cell with each figure outside notebooks/ attached to it and each link
    outside notebooks/ pointing at the repository.

    Raises:
        CourseError: a figure the cell shows is not in the checkout.
    """
    def replace(match: re.Match) -> str:
        image, text, path, anchor = match.group(1), match.group(2), match.group(3), match.group(4) or ""
        if not image:
            return f"[{text}]({repository_file(repository, path)}{anchor})"
        file = os.path.join(checkout.root, path)
        if not os.path.isfile(file):
            raise CourseError(f"the figure {path} is not in {checkout.root}: run "
                              f"`ipu-course diagrams` first")
        name = os.path.basename(path)
        with open(file, "rb") as f:
            data = base64.b64encode(f.read()).decode("ascii")
        attachments[name] = {mimetypes.guess_type(name)[0] or "application/octet-stream": data}
        return f"![{text}](attachment:{name})"

    attachments: dict = {}
    cell.source = OUTSIDE.sub(replace, cell.source)
    if attachments:
        cell.attachments = attachments
    return cell
