"""Exercises of lesson 11: observing and profiling (the NaN hunt, reading a report, and what
an anchored gradient holds)."""
import torch

from ipu_tutorials.classroom.exercises import observing
from tests.classroom.exercises.standard import standard_tests

test_solutions_pass, test_mistakes_get_their_feedback = standard_tests(observing)


def test_the_anchor_exercises_data_tells_the_last_micro_batch_from_the_mean():
    each, used = observing.anchored_step()
    per_micro_batch = each.view(8, -1)
    assert not torch.allclose(per_micro_batch[-1], used, atol=1e-4)  # Final is not the update's
    assert torch.allclose(per_micro_batch.mean(dim=0), used, atol=1e-6)
    assert len({tuple(row.tolist()) for row in per_micro_batch}) == 8  # 8 different ones
