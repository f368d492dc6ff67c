"""Every lesson's exercises (blocks ... half_precision): the reference answer passes, a typical wrong one is explained."""
import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.classroom.exercises import blocks, pipelining, sharding, offload, half_precision

S = poptorch.Stage
RIGHT_AND_WRONG = [
    (blocks.two_ipus, (poptorch.PipelinedExecution(S("B1", "B2").ipu(0), S("B3", "B4").ipu(1)),),
     (poptorch.PipelinedExecution(S("B1", "B2", "B3").ipu(0), S("B4").ipu(1)),),
     "B3 is on IPU 0, not IPU 1"),
    (blocks.fix_descending_stages, (poptorch.AutoStage.AutoIncrement,),
     (poptorch.AutoStage.SameAsIpu,), "SameAsIpu is the rule that failed"),
    (blocks.ipus_reserved, (8,), (6,), "6 is too low"),
    (pipelining.smallest_accumulation, (7,), (4,), "4 is too low"),
    (pipelining.combined_batch, (8000,), (4000,), "4000 is too low"),
    (pipelining.balance_two_ipus, (poptorch.PipelinedExecution(S("B1", "B2").ipu(0), S("B3", "B4").ipu(1)),),
     (poptorch.PipelinedExecution(S("B1", "B2", "B3").ipu(0), S("B4").ipu(1)),),
     "IPU 0 (B1, B2, B3) does 74% of the work"),
    (sharding.busy_ipus, (1,), (4,), "4 is too high"),
    (sharding.speedup, (sharding.measured_speedup(),), (4.0,), "4.0 is too high"),
    (offload.adamw_state_bytes, (720_208,), (360_104,), "too low"),
    (offload.make_it_fit, (), (), "IPU 15 is still"),
    (half_precision.loss_scale, (1024,), (1,), "only 96.3% of the gradients survive"),
    (half_precision.half_partials, (), (poptorch.Options(),), "did not shrink"),
]


@pytest.mark.parametrize("exercise, right, wrong, says", RIGHT_AND_WRONG,
                         ids=[e.title for e, *_ in RIGHT_AND_WRONG])
def test_every_exercise_accepts_the_right_answer_and_explains_a_wrong_one(exercise, right, wrong, says):
    right_kwargs = {"offload": True, "half": True} if exercise is offload.make_it_fit else {}
    if exercise is half_precision.half_partials:
        options = poptorch.Options()
        options.Precision.setPartialsType(torch.half)
        right = (options,)
    assert exercise.check(*right, **right_kwargs)
    feedback = exercise.check(*wrong)
    assert not feedback and says in repr(feedback)
    assert repr(feedback).startswith("Not yet: ")
