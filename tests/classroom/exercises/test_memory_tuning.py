"""Lesson 7's exercises refuse trivial and off-topic answers with specific feedback."""
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.classroom.exercises import memory_tuning as exercises
from ipu_tutorials.classroom.explorers.memory_tuning import (TunableLM, build_model,
                                                             starting_options, tune)
from tests.classroom.exercises.standard import standard_tests

test_solutions_pass, test_mistakes_get_their_feedback = standard_tests(exercises)


def test_trivial_answers_are_refused():
    check = exercises.fit_without_offloading.check
    for answer in (None, 0, poptorch.Options(), (build_model(), None)):
        feedback = check(answer)
        assert not feedback.correct and "(model, opts)" in feedback.message
    assert "replace the `...`" in check(...).message


def test_a_smaller_model_is_not_a_memory_tuning():
    with torch.device("meta"):
        small = TunableLM(vocab=1000, width=64, depth=2, heads=2, context=512).half()
    feedback = exercises.fit_without_offloading.check((small, starting_options()))
    assert not feedback.correct and "do not shrink it" in feedback.message


def test_a_proportion_that_fits_at_a_modest_cost_is_accepted():
    model = build_model(checkpoints=True)
    opts = starting_options().setAvailableMemoryProportion({f"IPU{i}": 0.2 for i in range(4)})
    assert exercises.fit_without_offloading.check((model, opts)).correct
    assert tune("checkpoint every layer", 0.2).step_ms > exercises.reference().step_ms


def test_a_longer_accumulation_is_not_mistaken_for_a_slow_plan():
    model = build_model(checkpoints=True, head_serialization=8)
    opts = starting_options()
    opts.Training.gradientAccumulation(64)
    assert exercises.fit_without_offloading.check((model, opts)).correct


def test_replicas_do_not_count_as_fitting():
    model = build_model(checkpoints=True, head_serialization=8)
    opts = starting_options().replicationFactor(2)
    feedback = exercises.fit_without_offloading.check((model, opts))
    assert not feedback.correct and "Keep one replica" in feedback.message


def test_the_most_freed_answer_is_computed_from_the_plans():
    ipu, freed = exercises.freed_on_fullest()
    assert ipu == 3 and freed["a"] == 0
    assert max(freed, key=freed.get) == "b"
    assert "one letter" in exercises.most_freed.check("d").message
    assert "one letter" in exercises.most_freed.check(None).message
