"""Exercises of lesson 16: PyTorch's own engines beside the simulated IPU."""
from ipu_tutorials.classroom.exercises import torch_engines
from tests.classroom.exercises.standard import standard_tests

test_solutions_pass, test_mistakes_get_their_feedback = standard_tests(torch_engines)


def test_the_ipu_cycles_are_told_as_the_simulator_runs_them():
    # was wrong: "the 2N-2 = 6 fill and flush cycles run only forwards or only backwards"
    from ipu_tutorials import poptorch
    from torch.distributed.pipelining import Schedule1F1B

    options = poptorch.Options()
    options.Training.gradientAccumulation(12)
    said = torch_engines.pick_a_schedule.check(Schedule1F1B, 12, options).message
    assert ("A+2N-2 = 18 cycles; only the first N-1 = 3 run forwards alone and the last 3 "
            "backwards alone" in said)
    assert "fill and flush cycles run only" not in said


def test_sharded_ipus_are_not_a_pipeline():
    # was wrong: options with ShardedExecution were judged as the pipeline, "Correct"
    from ipu_tutorials import poptorch
    from torch.distributed.pipelining import Schedule1F1B

    options = poptorch.Options().setExecutionStrategy(poptorch.ShardedExecution())
    options.Training.gradientAccumulation(12)
    feedback = torch_engines.pick_a_schedule.check(Schedule1F1B, 12, options)
    assert not feedback.correct
    assert "the options run ShardedExecution" in feedback.message
