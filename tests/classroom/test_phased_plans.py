"""phased_plans.py: lesson 6's blocks, the phased and pipelined strategies over them, the plans."""
import pytest

from ipu_tutorials import poptorch
from ipu_tutorials.classroom import phased_plans as lesson
from ipu_tutorials.errors import Error


def stage_ipus(strategy):
    return [[stage._ipu for stage in phase.stages] for phase in strategy._phases]


def test_serial_phases_use_every_ipu_and_parallel_ones_alternate():
    assert lesson.phase_ipus(lesson.SERIAL, 3, 4) == [0, 1, 2, 3]
    assert lesson.phase_ipus(lesson.PARALLEL, 0, 2) == [0, 2]
    assert lesson.phase_ipus(lesson.PARALLEL, 1, 2) == [1, 3]


def test_a_phased_strategy_has_one_block_per_stage_and_the_liveness_asked():
    serial = lesson.phased_strategy(lesson.SERIAL, 8, "OffChipAfterEachPhase")
    assert len(serial._phases) == 2
    assert serial._tensors_liveness is poptorch.Liveness.OffChipAfterEachPhase
    parallel = lesson.phased_strategy(lesson.PARALLEL, 8, "OffChipAfterFwd")
    assert len(parallel._phases) == 4
    assert parallel._tensors_liveness is poptorch.Liveness.OffChipAfterFwd
    assert stage_ipus(parallel) == [[0, 2], [1, 3], [0, 2], [1, 3]]
    with pytest.raises(Error, match="Liveness.OffChipAfterEachPhase is only supported for serial"):
        lesson.phased_strategy(lesson.PARALLEL, 8, "OffChipAfterEachPhase")


def test_the_blocks_must_divide_the_layers_and_each_size_is_built_once():
    with pytest.raises(Error, match="16 layers do not split evenly into 3 blocks"):
        lesson.chunked_model(layers=16, chunks=3)
    assert lesson.chunked_model(256, 4, 4) is lesson.chunked_model(256, 4, 4)


def test_a_small_model_fits_pipelined_and_its_outcome_is_remembered():
    model = lesson.chunked_model(256, 4, 4)
    outcome = lesson.plan_model(model, lesson.pipelined_strategy(4))
    assert outcome.fits and outcome.memory is outcome.plan.memory
    assert lesson.plan_model(model, lesson.pipelined_strategy(4)) is outcome
    assert lesson.streaming_seconds(outcome.plan) >= 0
