"""The plots draw what the data says: a row per IPU and the host, boxes per kind with a
legend, stacked memory with its capacity and an out-of-memory mark, arrows between IPUs."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from ipu_tutorials.profiling.plots import plot_memory, plot_placement, plot_timeline  # noqa: E402
from ipu_tutorials.simulator.memory import CATEGORIES  # noqa: E402
from ipu_tutorials.simulator.schedule import HOST_TRACK, Event  # noqa: E402

EVENTS = [Event(HOST_TRACK, 0.0, 2e-4, "host"), Event(0, 2e-4, 3e-4, "F", 0, 0, 0),
          Event(1, 5e-4, 3e-4, "F", 0, 1, 0), Event(1, 8e-4, 4e-4, "B", 0, 1, 0),
          Event(0, 1.2e-3, 1e-4, "update", step=1)]


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_the_timeline_has_a_row_per_ipu_and_the_host_in_the_right_unit():
    ax = plot_timeline(EVENTS, num_ipus=2, title="one step")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["IPU 0", "IPU 1", "host"]
    assert ax.get_xlabel() == "simulated time (ms)" and ax.get_xlim() == pytest.approx((0, 1.3))
    assert [t.get_text() for t in ax.get_legend().get_texts()] == \
        ["host I/O", "forward", "backward", "weight update"]
    assert ax.get_title() == "one step"


def test_steps_keep_the_first_device_iterations_and_the_host_row_can_go():
    ax = plot_timeline(EVENTS, num_ipus=2, steps=1, show_host=False)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["IPU 0", "IPU 1"]
    assert "weight update" not in [t.get_text() for t in ax.get_legend().get_texts()]


def memory_row(ipu, each, capacity):
    return {"ipu": ipu, **{c: each for c in CATEGORIES}, "total": each * len(CATEGORIES),
            "capacity": capacity}


def test_memory_bars_stack_the_categories_and_mark_an_ipu_out_of_memory():
    rows = [memory_row(0, 2**20, 2**30), memory_row(1, 2**28, 2**30)]
    ax = plot_memory(rows)
    widths = [p.get_width() for p in ax.patches]
    assert widths == pytest.approx([1.0] * len(CATEGORIES) + [256.0] * len(CATEGORIES))
    texts = [t.get_text() for t in ax.texts]
    assert "  out of memory" in texts and " capacity 1,024 MiB" in texts


def test_placement_draws_each_ipu_and_one_arrow_per_direction_with_its_bytes():
    stages = [{"index": 0, "ipu": 0, "blocks": ["B1"]}, {"index": 1, "ipu": 1, "blocks": ["B2"]}]
    edges = [{"from": "(host)", "to": "B1", "bytes": 10},
             {"from": "B1", "to": "B2", "bytes": 2048}, {"from": "B1", "to": "B2", "bytes": 2048}]
    ax = plot_placement(stages, edges)
    texts = [t.get_text() for t in ax.texts]
    assert "IPU 0" in texts and "IPU 1" in texts and "B2\nstage 1" in texts
    assert "4.0 KiB" in texts  # both edges B1 -> B2 added; the host's input draws no arrow
