"""A lesson executed and stored in the form JupyterLab saves it in.

The learner's notebook runs top to bottom with nbclient, widget state stored so explorers render
when opened. What the kernel returns is then made what JupyterLab would write back on its first
save: the installed kernel's display name, widget model ids drawn from the lesson (not random),
whole floats as integers, neighbouring prints joined, and no carriage-return progress frames.
Opening, trusting and saving a lesson therefore leaves the repository unchanged, and a rebuild
changes only what the lesson changed.
"""
from __future__ import annotations

import hashlib
import json
import os
import re

import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient

from .checkout import Checkout
from .editions import CELL_TIMEOUT

TIMEOUT = CELL_TIMEOUT  # seconds per cell
KERNEL = "python3"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def kernelspec() -> dict:
    """The kernelspec metadata JupyterLab writes on save: the installed kernel's display name
    ("Python 3 (ipykernel)"), so that saving does not rewrite it."""
    spec = KernelSpecManager().get_kernel_spec(KERNEL)
    return {"display_name": spec.display_name, "language": spec.language, "name": KERNEL}


def execute(nb: nbformat.NotebookNode, checkout: Checkout,
            env: dict[str, str] | None = None) -> nbformat.NotebookNode:
    """Run the notebook in a fresh kernel (with environment `env`, else this process's) whose
    working directory is the checkout's notebooks/, and return it in the form JupyterLab saves."""
    client = NotebookClient(nb, timeout=TIMEOUT, kernel_name=KERNEL, store_widget_state=True,
                            resources={"metadata": {"path": checkout.notebooks}})
    client.execute(env=dict(os.environ if env is None else env))
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
