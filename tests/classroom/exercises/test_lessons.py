"""Every lesson's exercises (lesson1 ... lesson5): the reference answer passes, a typical wrong one is explained."""
import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.classroom.exercises import lesson1, lesson2, lesson3, lesson4, lesson5

S = poptorch.Stage
RIGHT_AND_WRONG = [
    (lesson1.two_ipus, (poptorch.PipelinedExecution(S("B1", "B2").ipu(0), S("B3", "B4").ipu(1)),),
     (poptorch.PipelinedExecution(S("B1", "B2", "B3").ipu(0), S("B4").ipu(1)),),
     "B3 is on IPU 0, not IPU 1"),
    (lesson1.fix_descending_stages, (poptorch.AutoStage.AutoIncrement,),
     (poptorch.AutoStage.SameAsIpu,), "SameAsIpu is the rule that failed"),
    (lesson1.ipus_reserved, (8,), (6,), "6 is too low"),
    (lesson2.smallest_accumulation, (7,), (4,), "4 is too low"),
    (lesson2.combined_batch, (8000,), (4000,), "4000 is too low"),
    (lesson2.balance_two_ipus, (poptorch.PipelinedExecution(S("B1", "B2").ipu(0), S("B3", "B4").ipu(1)),),
     (poptorch.PipelinedExecution(S("B1", "B2", "B3").ipu(0), S("B4").ipu(1)),),
     "IPU 0 (B1, B2, B3) does 74% of the work"),
    (lesson3.busy_ipus, (1,), (4,), "4 is too high"),
    (lesson3.speedup, (lesson3.measured_speedup(),), (4.0,), "4.0 is too high"),
    (lesson4.adamw_state_bytes, (720_208,), (360_104,), "too low"),
    (lesson4.make_it_fit, (), (), "IPU 15 is still"),
    (lesson5.loss_scale, (1024,), (1,), "only 96.3% of the gradients survive"),
    (lesson5.half_partials, (), (poptorch.Options(),), "did not shrink"),
]


@pytest.mark.parametrize("exercise, right, wrong, says", RIGHT_AND_WRONG,
                         ids=[e.title for e, *_ in RIGHT_AND_WRONG])
def test_every_exercise_accepts_the_right_answer_and_explains_a_wrong_one(exercise, right, wrong, says):
    right_kwargs = {"offload": True, "half": True} if exercise is lesson4.make_it_fit else {}
    if exercise is lesson5.half_partials:
        options = poptorch.Options()
        options.Precision.setPartialsType(torch.half)
        right = (options,)
    assert exercise.check(*right, **right_kwargs)
    feedback = exercise.check(*wrong)
    assert not feedback and says in repr(feedback)
    assert repr(feedback).startswith("Not yet: ")
