"""One consistent world: where lessons (and the docs) run the same model with the same options,
they print the same simulated figures.

Each group below lists figures that come from one configuration; the stored lesson outputs
(notebooks/*.ipynb, rebuilt by build_notebooks.py) must agree on it.
"""
import os
import re

import nbformat
import pytest

import build_notebooks

GROUPS = {
    # tutorial.training_options("pipelined", 10, 10), Network, AdamW, Async loader, micro-batch 40
    "pipelining tutorial, 4 IPUs pipelined, D 10, A 10": [
        ("notebooks/04_pipelining.ipynb", r"Simulated training throughput: ([\d,]+) images/s"),
        ("notebooks/04_pipelining.ipynb", r"\n\s*10\s+\d+\s+\d+%\s+[\d,]+\s+([\d,]+)\n"),
        ("notebooks/05_sharding.ipynb", r"pipelined: at most .*?, ([\d,]+) images/s fed by the host"),
    ],
    # the same pipelined plan: its device-only throughput
    "pipelining tutorial, device throughput": [
        ("notebooks/04_pipelining.ipynb", r"\n\s*10\s+\d+\s+\d+%\s+([\d,]+)\s+[\d,]+\n"),
        ("notebooks/05_sharding.ipynb", r"pipelined: at most .*?, ([\d,]+) images/s on the IPUs"),
    ],
    # tutorial/capstone.py: BERT-Large phase 1 with the published recipe on a Bow Pod16
    "BERT-Large on a Bow Pod16, published recipe": [
        ("notebooks/15_capstone_pod16.ipynb", r"simulated ([\d,]+) \(ratio"),
        ("notebooks/15_capstone_pod16.ipynb", r"published recipe\s+fullest IPU.*?([\d,]+) seq/s"),
        ("notebooks/15_capstone_pod16.ipynb", r"; ([\d,]+) sequences/s simulated \(published run"),
        ("docs/cost-model.md", r"BERT-Large phase 1, Bow Pod16.*?\| [\d,]+ sequences/s \| ([\d,]+) sequences/s"),
    ],
    # lesson 11's pipelined Network, D 1, A 8, 128 images per call
    "lesson 11's pipelined classifier": [
        ("notebooks/11_observing_and_profiling.ipynb", r"Simulated call: [\d.]+ ms, ([\d,]+) samples/s"),
        ("notebooks/11_observing_and_profiling.ipynb", r"a call of 128 images takes [\d.]+ ms \(([\d,]+) images/s\)"),
    ],
}


def text_of(path: str) -> str:
    """A page's text; for a notebook, its cells' sources and their printed or shown outputs."""
    full = os.path.join(build_notebooks.ROOT, path)
    if not path.endswith(".ipynb"):
        with open(full, encoding="utf-8") as handle:
            return handle.read()
    parts = []
    for cell in nbformat.read(full, as_version=4).cells:
        parts.append(cell.source)
        for output in cell.get("outputs", []):
            parts.append(output.get("text", "") or output.get("data", {}).get("text/plain", ""))
    return "\n".join(parts)


def figure(path: str, pattern: str) -> str:
    found = re.search(pattern, text_of(path), re.S)
    assert found, f"{path}: no figure matching {pattern!r}"
    return found.group(1)


@pytest.mark.parametrize("group", GROUPS)
def test_the_same_configuration_prints_the_same_figure_everywhere(group):
    figures = {f"{path} /{pattern}/": figure(path, pattern) for path, pattern in GROUPS[group]}
    assert len(set(figures.values())) == 1, f"{group}: {figures}"
