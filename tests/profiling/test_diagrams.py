"""Diagrams draw the simulator's own schedule and memory data, so they cannot disagree with it."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from ipu_tutorials.profiling import diagrams  # noqa: E402
from ipu_tutorials.simulator import phases  # noqa: E402
from ipu_tutorials.simulator.memory import IpuMemory  # noqa: E402
from ipu_tutorials.simulator.schedule import pipeline_grid, sharded_step, pipelined_step  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.mark.parametrize("n, a", [(2, 3), (4, 8), (4, 10)])
def test_the_staircase_has_the_cells_of_the_schedules_grid(n, a):
    grid = pipeline_grid(list(range(n)), a, True).splitlines()
    cells = diagrams.staircase_cells(n, a)
    for ipu, line in enumerate(grid):
        drawn = [" ".join(str(x) for x in cells.get((c, ipu), [])) or "."
                 for c in range(len(diagrams.pipeline_cycles(n, a, True)))]
        assert line.split()[2:] == " ".join(drawn).split()


def test_fill_main_and_drain_cover_the_step_as_the_rules_say():
    regions = diagrams.pipeline_regions(4, 8)
    assert regions == [("fill", 0, 6), ("main", 6, 8), ("drain", 8, 14)]  # P-1 = 2N-2 each side


def test_the_pipeline_figure_labels_what_it_draws():
    ax = diagrams.draw_pipeline(4, 8)
    texts = [t.get_text() for t in ax.texts]
    assert "fill: 6 cycles" in texts and "main: 2 cycles" in texts and "drain: 6 cycles" in texts
    assert texts.count("F0") == 4 and texts.count("B7") == 4  # every IPU runs each micro-batch
    assert "4 IPUs, gradient accumulation 8" in ax.get_title()


def test_sharding_and_pipelining_titles_are_the_schedules_own_step_times():
    fig = diagrams.draw_sharding_vs_pipelining(4, 4)
    sharded = sharded_step(diagrams.unit_stages(4), 4, True, 0.0, 0)[1]
    pipelined = pipelined_step(diagrams.unit_stages(4), 4, True, 0.0, 0)[1]
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == [f"sharded: {sharded:g} time units for 4 micro-batches",
                      f"pipelined: {pipelined:g} time units for 4 micro-batches"]
    assert pipelined < sharded


def test_phase_cells_follow_the_phase_program_and_residency():
    works = diagrams.phase_works(1, 3)
    runs = phases.program(works, phases.ALWAYS_LIVE, False, True)
    cells = diagrams.phase_cells(works, runs)
    assert {x: labels for (ipu, lane, x), labels in cells.items() if lane == 0} == {
        0: ["F0"], 1: ["F1"], 2: ["F2", "B2"], 3: ["B1"], 4: ["B0"]}
    assert cells[(0, 1, -1)] == ["in 0"] and cells[(0, 1, 5)] == ["out 0"]


def test_the_memory_figure_states_the_plans_total_and_capacity():
    memory = IpuMemory(ipu=0, capacity=900 * 2 ** 20, code=10 * 2 ** 20, weights=20 * 2 ** 20)
    fig = diagrams.draw_memory(memory, "IPU 0")
    assert fig.axes[0].get_title() == "IPU 0: 30.0 MiB of 900.0 MiB"
    widths = [p.get_width() for p in fig.axes[0].patches]
    assert widths[:2] == [10, 20]


def test_the_replication_figure_draws_each_replicas_off_chip_optimizer_state():
    full = IpuMemory(ipu=0, capacity=1, weights=2 ** 20, off_chip={"optimizer": 4 * 2 ** 20})
    shard = IpuMemory(ipu=0, capacity=1, weights=2 ** 20, off_chip={"optimizer": 2 ** 20})
    fig = diagrams.draw_replication({"full": [full] * 2, "sharded": [shard] * 2})
    heights = [[p.get_height() for p in ax.patches] for ax in fig.axes]
    assert heights == [[1, 4, 1, 4], [1, 1, 1, 1]]
