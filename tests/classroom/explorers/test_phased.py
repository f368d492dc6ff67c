"""The phase planner driven headless: its numbers are the compiled plans'."""
import matplotlib

from ipu_tutorials.classroom import phased_plans as lesson
from ipu_tutorials.classroom.explorers.phased import compare, phase_planner

matplotlib.use("Agg")


def figure_bytes(explorer) -> str:
    return explorer.output.outputs[0]["data"]["image/png"]


def test_a_stricter_liveness_makes_the_phases_fit_where_the_pipeline_cannot():
    planner = phase_planner(liveness="AlwaysLive")
    assert planner.text.count("does not fit") == 2  # phased (AlwaysLive) and pipelined
    png = figure_bytes(planner)
    planner.controls["liveness"].value = "OffChipAfterEachPhase"
    assert "Liveness.OffChipAfterEachPhase: fits" in planner.text
    assert "ms per step" in planner.text and figure_bytes(planner) != png
    phased = planner.result["phased"]
    assert [m.total for m in phased.memory.ipus] == [
        m.total for m in lesson.plan_model(lesson.chunked_model(1536, 16, 16),
                                           lesson.phased_strategy(lesson.SERIAL, 16,
                                                                  "OffChipAfterEachPhase")).memory.ipus]


def test_parallel_phases_refuse_the_serial_only_livenesses():
    planner = phase_planner(kind=lesson.PARALLEL, liveness="AlwaysLive", phases=8)
    assert "Liveness.AlwaysLive: fits" in planner.text
    planner.controls["liveness"].value = "OffChipAfterFwdNoOverlap"
    assert "only supported for serial phase execution" in planner.text
    assert planner.figure is None


def test_a_small_model_pipelines_and_streaming_costs_the_phases_time():
    result = compare(1024, 8, 2, lesson.SERIAL, "AlwaysLive")
    assert result["pipelined"].fits and result["phased"].fits
    pipelined, phased = result["pipelined"].plan, result["phased"].plan
    assert phased.call_seconds > pipelined.call_seconds
    assert lesson.streaming_seconds(phased) > lesson.streaming_seconds(pipelined)


def test_layers_that_do_not_split_into_the_stages_are_explained():
    planner = phase_planner(layers=8, phases=8)
    assert "do not split evenly into 32 blocks" in planner.text
