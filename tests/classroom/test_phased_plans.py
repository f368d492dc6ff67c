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


def test_a_remembered_outcome_logs_again_what_its_compile_logged(caplog):
    # was wrong: exercise 6.1's "name no IPU" mistake passed its check when another test in the
    # same process had compiled that strategy first (the remembered outcome logged nothing)
    model = lesson.chunked_model(256, 4, 4)
    unnamed = poptorch.SerialPhasedExecution(
        *[poptorch.Phase(*[poptorch.Stage(f"chunk{p}")]) for p in range(4)])
    warnings = []
    for _ in range(2):
        caplog.clear()
        with caplog.at_level("WARNING", logger="poptorch"):
            lesson.plan_model(model, unnamed)
        warnings.append([r.getMessage() for r in caplog.records if r.name == "poptorch"])
    assert len(warnings[0]) == 1 and "name no IPU" in warnings[0][0]
    assert warnings[1] == warnings[0]
