"""The capstone dashboard driven headless: its numbers are the compiled plan's."""
import matplotlib
import pytest

from ipu_tutorials.classroom.explorers.capstone import capstone_explorer, pod16_result, step_ends
from ipu_tutorials.simulator.timeline import pipeline_parts
from ipu_tutorials.tutorial import capstone

matplotlib.use("Agg")


def figure_bytes(explorer) -> str:
    return explorer.output.outputs[0]["data"]["image/png"]


@pytest.fixture(scope="module")
def explorer():
    return capstone_explorer()


def test_the_dashboard_opens_on_the_published_run(explorer):
    plan = capstone.plan_pod16(capstone.PUBLISHED)
    speed = capstone.sequences_per_second(plan)
    assert f"fits (fullest IPU 1: 565.6 MiB of 897.0 MiB)" in explorer.text
    assert f"{speed:,.0f} sequences/s simulated (published run: 5,600)" in explorer.text
    assert "4 replica(s) x 4 IPU(s) = 16 of 16 IPUs, accumulation 2048: " in explorer.text
    # was wrong: "(65,536 sequences per update)" here answered exercise 15.1 before it was asked
    assert "65,536" not in explorer.text


def test_float32_shows_the_out_of_memory_message_and_the_memory(explorer):
    before = figure_bytes(explorer)
    explorer.controls["half"].value = False
    try:
        assert "Out of memory: IPU 0 needs" in explorer.text
        assert "plan" not in explorer.result and figure_bytes(explorer) != before
    finally:
        explorer.controls["half"].value = True
    assert figure_bytes(explorer) == before


def test_accumulation_reaches_the_plan(explorer):
    explorer.controls["accumulation"].value = 64
    try:
        plan = capstone.plan_pod16(capstone.PodConfig(accumulation=64))
        assert f"{capstone.sequences_per_second(plan):,.0f} sequences/s" in explorer.text
        assert (explorer.result["plan"].samples_per_second <
                pod16_result(capstone.PUBLISHED)["plan"].samples_per_second)
    finally:
        explorer.controls["accumulation"].value = 2048


def test_the_dashboard_shows_the_rule_a_pod16_breaks(explorer):
    explorer.controls["replicas"].value = 8
    try:
        assert "failed to acquire 32 IPUs" in explorer.text
        assert explorer.output.outputs == ()
    finally:
        explorer.controls["replicas"].value = 4


def test_step_ends_are_the_fill_and_the_closing_update():
    plan = pod16_result(capstone.PUBLISHED)["plan"]
    (open_start, open_end), (close_start, close_end) = step_ends(plan.timeline.events)
    step = [e for e in plan.timeline.events if e.step == 0 and e.ipu >= 0]
    parts = {name: (start, end) for name, start, end in pipeline_parts(step)}
    assert open_start == parts["fill"][0] == min(e.start for e in step)  # the device's first box
    assert parts["fill"][1] < open_end < parts["main"][1]
    assert parts["main"][0] < close_start < parts["flush"][0]
    closing = {e.kind for e in step if e.start >= close_start}
    assert closing >= {"B", "allreduce", "stream", "update"}
    assert close_end == max(e.end for e in step) > parts["flush"][1]  # the update closes it
