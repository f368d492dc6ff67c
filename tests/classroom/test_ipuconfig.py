"""Lesson 13's explorer and exercises: reference solutions pass, typical mistakes get their feedback."""
import pytest

pytest.importorskip("transformers")

from ipu_tutorials.classroom.exercises import ipuconfig as exercises  # noqa: E402
from ipu_tutorials.classroom.explorers.ipuconfig import (bert_ipu_config, ipuconfig_explorer,  # noqa: E402
                                                         plan_bert)


def test_balance_exercise_accepts_the_best_split_and_explains_the_even_one():
    best = exercises.best_split()
    assert sum(best) == 12 and best[0] < 3  # IPU 0 also holds the embedding and the LM head
    assert exercises.balance_bert.check(best)
    even = exercises.balance_bert.check([3, 3, 3, 3])
    assert not even and "IPU 0 is the busiest" in even.message and "move a layer off it" in even.message


@pytest.mark.parametrize("answer,message", [
    ([3, 3, 3, 2], "places 11 layers; BERT-Base has 12"),
    ([4, 4, 4], "a list of 4 whole numbers"),
    ([-1, 4, 4, 4], "-1 shares layers evenly"),
    ([12, 0, 0, 0], "does not fit in memory"),
])
def test_balance_exercise_feedback_for_typical_mistakes(answer, message):
    feedback = exercises.balance_bert.check(answer)
    assert not feedback and message in feedback.message


def test_the_re_planned_split_agrees_with_a_full_compile():
    compiled = plan_bert(bert_ipu_config([1, 4, 4, 3])).plan.call_seconds
    assert exercises._seconds((1, 4, 4, 3)) == pytest.approx(compiled, rel=1e-9)


@pytest.mark.parametrize("answer,correct,message", [
    (8 * 16 * 32 * 2, True, "8,192 sequences per call"),
    (8 * 4 * 48 * 2, False, "is the pod16 batch"),
    (16 * 32 * 2, False, "multiply it by the micro-batch of 8"),
    (8 * 16 * 32, False, "leave out the 2 device iterations"),
    (10, False, "too low"),
])
def test_pod64_batch_exercise(answer, correct, message):
    feedback = exercises.pod64_batch.check(answer)
    assert bool(feedback) is correct and message in feedback.message


def test_explorer_shows_the_plan_and_refuses_too_many_layers():
    explorer = ipuconfig_explorer(first=1, second=4, third=4)
    assert "layers_per_ipu=[1, 4, 4, 3]" in explorer.text and "sequences/s" in explorer.text
    explorer.controls["first"].value = 6
    assert "IPUs 0-2 take 14 of BERT-Base's 12 layers" in explorer.text
