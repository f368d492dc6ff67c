"""Writes the course's conceptual diagrams to static/ (`ipu-course diagrams`).

The schedule figures come straight from the simulator's schedule functions; the memory and
replication figures from plans of a small transformer compiled on the meta device.
"""
from __future__ import annotations

import os
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

from .. import poptorch  # noqa: E402
from ..profiling import diagrams  # noqa: E402
from ..simulator.compile import Plan  # noqa: E402
from ..tutorial.models import TransformerLM, split_layers  # noqa: E402
from ..classroom.plans import plan_on_meta  # noqa: E402

REPLICAS = 4
NAMES = ("pipeline", "sharding_vs_pipelining", "phases", "replication", "memory")


def small_transformer_plan(replicas: int = 1, offload: bool = False, sharded: bool = False) -> Plan:
    """A 4-layer transformer of width 256 pipelined over 2 IPUs, AdamW, planned on meta tensors."""
    with torch.device("meta"):
        model = split_layers(TransformerLM(width=256, depth=4, heads=4), [2, 2])
    opts = poptorch.Options().replicationFactor(replicas)
    opts.Training.gradientAccumulation(8)
    location = poptorch.TensorLocationSettings().useOnChipStorage(not offload)
    opts.TensorLocations.setOptimizerLocation(location.useReplicatedTensorSharding(sharded))
    tokens = torch.zeros(4 * 8 * replicas, 64, dtype=torch.long, device="meta")
    return plan_on_meta(model, opts, poptorch.optim.AdamW(model.parameters()), tokens, tokens)


def replication_memories() -> dict[str, list]:
    """Each replica's first IPU, with the optimizer state off chip, without and with RTS."""
    return {f"{REPLICAS} replicas: full optimizer state each": [
                small_transformer_plan(REPLICAS, offload=True).memory[0]] * REPLICAS,
            f"with replicated tensor sharding: 1/{REPLICAS} each": [
                small_transformer_plan(REPLICAS, offload=True, sharded=True).memory[0]] * REPLICAS}


def figures():
    """name -> a function drawing that figure."""
    return {"pipeline": diagrams.draw_pipeline,
            "sharding_vs_pipelining": diagrams.draw_sharding_vs_pipelining,
            "phases": diagrams.draw_phases,
            "replication": lambda: diagrams.draw_replication(replication_memories()),
            "memory": lambda: diagrams.draw_memory(small_transformer_plan().memory[0],
                                                   "Where memory goes on IPU 0 of a pipelined transformer")}


def _save(figure, path: str) -> None:
    """Write atomically: a reader never sees half a PNG."""
    figure = figure if hasattr(figure, "savefig") else figure.figure
    handle, temporary = tempfile.mkstemp(suffix=".png", dir=os.path.dirname(path) or ".")
    os.close(handle)
    try:
        figure.savefig(temporary, dpi=100, bbox_inches="tight", metadata={"Software": None})
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)
        plt.close(figure)


def write_diagrams(directory: str = "static") -> list[str]:
    """Draw every diagram into `directory`/diagram_<name>.png; returns the paths written."""
    os.makedirs(directory, exist_ok=True)
    paths = []
    for name, draw in figures().items():
        path = os.path.join(directory, f"diagram_{name}.png")
        _save(draw(), path)
        paths.append(path)
    return paths
