"""The schedule explorer driven headless: the IPU's side is the simulator's pipelined step,
torch's side the orders torch runs, and a count either side refuses is said with its rule."""
import matplotlib
import pytest

from ipu_tutorials.classroom.explorers.schedules import compare_schedules, schedule_explorer
from ipu_tutorials.errors import Error
from ipu_tutorials.profiling.diagrams import unit_stages
from ipu_tutorials.tutorial.torch_engines.schedules import bubble, ipu_step

matplotlib.use("Agg")


def figure_bytes(explorer) -> str:
    return explorer.output.outputs[0]["data"]["image/png"]


def test_both_sides_of_lesson_4s_split():
    result = compare_schedules(4, 10, "1F1B")
    assert result["ipu"]["events"] == ipu_step(unit_stages(4), 10)
    assert result["ipu"]["bubble"] == pytest.approx(3 / 13) == result["torch"]["bubble"]
    assert (result["ipu"]["held"], result["torch"]["held"]) == (7, 4)
    assert compare_schedules(4, 10, "GPipe")["torch"]["held"] == 10
    assert result["refused"] == []


def test_the_explorer_redraws_for_every_control():
    explorer = schedule_explorer()
    assert explorer.text.startswith("(P-1)/(M+P-1) = 3/13 = 23% for equal stages; IPU pipeline: "
                                    "7 pipeline stages, 16 cycles, idle 23%")
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
