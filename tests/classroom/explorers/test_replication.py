"""Lesson 10's explorer: its numbers are compiled plans."""
import matplotlib
import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.classroom.explorers.replication import (GLOBAL_BATCH, MICRO_BATCH, _model,
                                                           pod_split, replication_explorer)
from ipu_tutorials.tutorial.models import split_layers
from ipu_tutorials.classroom.explorers.memory import even_split

matplotlib.use("Agg")


def test_every_split_of_the_pod_updates_from_the_same_global_batch():
    for depth in (1, 4, 16):
        split = pod_split("20M", depth)
        assert split.replicas * depth == 16
        assert split.replicas * split.accumulation * MICRO_BATCH == GLOBAL_BATCH


def test_the_explorer_numbers_are_the_runtime_plan():
    model = _model("20M")
    split_layers(model, even_split(16, 4))
    opts = poptorch.Options().replicationFactor(4).showCompilationProgressBar(False)
    opts.Training.gradientAccumulation(32)
    training = poptorch.trainingModel(model, opts, poptorch.optim.AdamW(model.parameters()))
    tokens = torch.zeros(GLOBAL_BATCH, 128, dtype=torch.long, device="meta")
    training.compile(tokens, tokens)
    split = pod_split("20M", 4)
    assert split.samples_per_second == training.plan.samples_per_second
    assert split.fullest_bytes == max(m.total for m in training.plan.memory.ipus)
    training.destroy()


def test_the_explorer_marks_a_replica_too_big_for_one_ipu_and_redraws():
    explorer = replication_explorer("20M", depth=1)
    assert "out of memory" in explorer.text
    explorer.controls["depth"].value = 2
    assert "fits" in explorer.text and "sequences/s simulated" in explorer.text
    assert explorer.output.outputs


def test_an_unknown_depth_names_the_valid_ones():
    with pytest.raises(ValueError, match=r"one of \(1, 2, 4, 8, 16\), got 3"):
        pod_split("20M", 3)
