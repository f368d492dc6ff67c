"""Voila serves the pipeline explorer as an app, and it reacts to its controls."""
from __future__ import annotations

import nbformat

from tests.browser.pages import LiveExplorer, check_explorer_reacts

CELLS = ["from ipu_tutorials.classroom.explorers import pipeline_explorer",
         "pipeline_explorer(ipus=4, accumulation=8)"]


def test_voila_serves_the_pipeline_explorer_and_it_reacts(voila, page, tmp_path):
    notebook = tmp_path / "pipeline_explorer.ipynb"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, notebook)
    page.goto(voila(notebook), timeout=120_000)
    root = page.locator(".ipu-explorer")
    root.wait_for(timeout=120_000)
    explorer = LiveExplorer(root)
    assert explorer.title == "Pipeline explorer"
    assert check_explorer_reacts(explorer) == ["slider", "dropdown"]
    root.screenshot(path=str(tmp_path / "voila.png"))
