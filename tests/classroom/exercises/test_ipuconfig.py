"""Lesson 13's exercises: the best split the balance check compares with, and how it is found."""
import pytest

pytest.importorskip("transformers")

from ipu_tutorials.classroom.exercises import ipuconfig as exercises  # noqa: E402
from ipu_tutorials.classroom.explorers.ipuconfig import bert_ipu_config, plan_bert  # noqa: E402
from tests.classroom.exercises.standard import standard_tests  # noqa: E402

test_solutions_pass, test_mistakes_get_their_feedback = standard_tests(exercises)


def test_the_best_split_gives_ipu_0_fewer_layers():
    best = exercises.best_split()
    assert sum(best) == 12 and best[0] < 3  # IPU 0 also holds the embedding and the LM head
    assert exercises.balance_bert.check(best)


def test_the_re_planned_split_agrees_with_a_full_compile():
    compiled = plan_bert(bert_ipu_config([1, 4, 4, 3])).plan.call_seconds
    assert exercises._seconds((1, 4, 4, 3)) == pytest.approx(compiled, rel=1e-9)
