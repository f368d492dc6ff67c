"""Lesson 10's explorer (its numbers are compiled plans) and exercises, right and wrong."""
import matplotlib
import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.classroom.exercises import replication as exercises
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


@pytest.mark.parametrize("exercise, answer, says", [
    (exercises.samples_per_update, 96, "every replica's gradients go into one update"),
    (exercises.samples_per_update, 48, "that is one instance's share"),
    (exercises.samples_per_update, 32, "accumulates gradients over several micro-batches"),
    (exercises.samples_per_update, 24, "that is a single replica"),
    (exercises.sum_learning_rate, 0.1 / 32, "32 times smaller"),
    (exercises.sum_learning_rate, 0.1 / 4, "not only the replicas"),
    (exercises.sum_learning_rate, 3.2, "divide instead"),
])
def test_numeric_exercises_explain_right_and_typical_wrong_answers(exercise, answer, says):
    feedback = exercise.check(answer)
    assert says in repr(feedback)
    assert bool(feedback) == (says in ("every replica's gradients go into one update",
                                       "32 times smaller"))


def reference_options(instance):
    opts = poptorch.Options().replicationFactor(2).randomSeed(42)
    opts.Distributed.configureProcessId(instance, 2)
    return opts


def total_replicas(instance):
    return poptorch.Options().replicationFactor(4).randomSeed(42)


def no_process_id(instance):
    return poptorch.Options().replicationFactor(2).randomSeed(42)


def no_seed(instance):
    opts = poptorch.Options().replicationFactor(2)
    opts.Distributed.configureProcessId(instance, 2)
    return opts


@pytest.mark.parametrize("answer, correct, says", [
    (reference_options, True, "disjoint shares of 32 samples"),
    (total_replicas, False, "replicationFactor is the replicas of THIS process"),
    (no_process_id, False, "call opts.Distributed.configureProcessId(instance, 2)"),
    (no_seed, False, "needs options.randomSeed"),
    (reference_options(0), False, "give the function itself"),
])
def test_the_options_exercise_runs_the_dataloader_of_both_instances(answer, correct, says):
    feedback = exercises.instance_options.check(answer)
    assert bool(feedback) == correct and says in repr(feedback)
