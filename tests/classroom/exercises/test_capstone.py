"""Lesson 15's exercises beyond their declared mistakes: other right answers, trivial answers."""
import os

import torch

from ipu_tutorials import poptorch
from ipu_tutorials.classroom.exercises import capstone as exercises
from tests.classroom.exercises.standard import standard_tests

NAMESPACE = exercises.lesson_namespace()
WALKTHROUGH = os.path.join(os.path.dirname(__file__), "..", "..", "..", "walkthroughs",
                           "15_capstone_pod16.py")

test_solutions_pass, test_mistakes_get_their_feedback = standard_tests(exercises)


def test_the_lesson_shows_the_starting_code_the_mistake_uses():
    with open(WALKTHROUGH) as f:
        lesson = f.read()
    for line in exercises.STARTING_CODE.strip().splitlines():
        assert f"# {line}" in lesson, line


def test_another_right_answer_passes():
    balanced = exercises._mistake(("(3, 7, 7, 7)", "(6, 6, 6, 6)"),
                                  ("gradientAccumulation(1024)", "gradientAccumulation(2048)"))
    feedback = exercises.pod16_setup.run_code(balanced, NAMESPACE)
    assert feedback.correct, feedback.message


def test_trivial_answers_fail_with_a_reason():
    assert "give the function itself" in exercises.pod16_setup.check(None).message
    empty = exercises.pod16_setup.check(lambda: (torch.nn.Linear(1, 1), poptorch.Options()))
    assert not empty and "the target is for BERT-Large" in empty.message
    assert "must return (model, opts)" in exercises.pod16_setup.check(lambda: None).message


def test_a_smaller_bert_does_not_count():
    small = exercises._mistake(("BertPretraining(layers_per_ipu=(3, 7, 7, 7))",
                                "BertPretraining(depth=4, layers_per_ipu=(1, 1, 1, 1))"))
    feedback = exercises.pod16_setup.run_code(small, NAMESPACE)
    assert not feedback and "the target is for BERT-Large" in feedback.message


def test_sequences_per_update_accepts_the_number_however_written():
    assert exercises.samples_per_update.check(65_536)
    assert "too low" in exercises.samples_per_update.check(8 * 2048 * 2).message
