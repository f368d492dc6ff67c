"""The schedule explorer driven headless: the IPU's side is the simulator's pipelined step,
recomputation included, torch's side the orders torch runs, with and without that
recomputation, and a count either side refuses is said with its rule."""
import matplotlib
import pytest

from ipu_tutorials import poptorch
from ipu_tutorials.classroom.explorers.schedules import (compare_schedules, recomputing_stages,
                                                         schedule_explorer)
from ipu_tutorials.classroom.plans import tutorial_plan
from ipu_tutorials.errors import Error
from ipu_tutorials.tutorial import strategy
from ipu_tutorials.torch_engines.schedules import bubble, ipu_step

matplotlib.use("Agg")


def figure_bytes(explorer) -> str:
    return explorer.output.outputs[0]["data"]["image/png"]


def test_both_sides_of_lesson_4s_split():
    result = compare_schedules(4, 10, "1F1B")
    assert result["ipu"]["events"] == ipu_step(recomputing_stages(4), 10)
    assert result["ipu"]["bubble"] == pytest.approx(3 / 13) == result["torch"]["bubble"]
    assert (result["ipu"]["held"], result["torch"]["held"]) == (7, 4)
    assert compare_schedules(4, 10, "GPipe")["torch"]["held"] == 10
    assert result["refused"] == []


@pytest.mark.parametrize("schedule", ["1F1B", "GPipe"])
def test_both_sides_count_the_same_work_when_torch_recomputes_too(schedule):
    # forward 1, backward 2; the IPU's backward recomputes the forward first: 3 units. Its 16
    # cycles: 3 of forwards alone (1), 10 of a forward and a backward (4), 3 of backwards (3)
    result = compare_schedules(4, 10, schedule)
    assert result["ipu"]["step"] == 3 * 1 + 10 * 4 + 3 * 3 == 52
    assert result["torch"]["step"] == 39  # keeping activations: no recomputation
    assert result["torch"]["recomputing"] == 52  # the same work as the IPU's


def test_the_ipu_side_recomputes_as_the_simulators_cost_model_does():
    assert [(s.forward, s.backward) for s in recomputing_stages(4)] == [(1.0, 3.0)] * 4
    opts = poptorch.Options()
    opts._Popart.set("autoRecomputation", 0)  # the same pipeline with recomputation off
    off = tutorial_plan(strategy("pipelined"), accumulation=8, options=opts).stage_costs
    on = tutorial_plan(strategy("pipelined"), accumulation=8).stage_costs
    for with_, without in zip(on, off):
        assert with_.backward == pytest.approx(without.backward + without.forward)


def test_the_explorer_redraws_for_every_control():
    explorer = schedule_explorer()
    assert "the IPU's backward also recomputes its forward" in explorer.figure.axes[-1].get_xlabel()
    assert explorer.text.startswith("(P-1)/(M+P-1) = 3/13 = 23% for equal stages; IPU pipeline: "
                                    "7 pipeline stages, 16 cycles, a step of 52 units (each "
                                    "backward recomputes its forward), idle 23%")
    for control, value in (("stages", 5), ("micro_batches", 20), ("schedule", "GPipe")):
        before_text, before_png = explorer.text, figure_bytes(explorer)
        explorer.controls[control].value = value
        assert explorer.text != before_text and figure_bytes(explorer) != before_png
    events = explorer.result["torch"]["events"]
    assert explorer.result["torch"]["bubble"] == bubble(events, 5) == pytest.approx(4 / 24)


def test_a_count_one_side_refuses_leaves_the_other():
    result = compare_schedules(4, 5, "1F1B")
    assert result["ipu"] is None and result["torch"] is not None
    assert result["refused"] == ["PopTorch refuses gradientAccumulation(5) on 4 pipelined IPUs: "
                                 "it needs at least 2N-1 = 7"]
    assert compare_schedules(4, 3, "GPipe")["torch"]["held"] == 3


def test_a_count_both_sides_refuse_is_the_explorers_message():
    with pytest.raises(Error, match=r"it needs at least 2N-1 = 7; torch's Schedule1F1B refuses: "
                                    r"Number of microbatches \(3\)"):
        compare_schedules(4, 3, "1F1B")
    explorer = schedule_explorer(micro_batches=3)
    assert "Number of microbatches (3)" in explorer.text and explorer.output.outputs == ()
