"""The plots draw what the data says: a row per IPU and the host, boxes per kind with a
legend, stacked memory with its capacity and an out-of-memory mark, arrows between IPUs."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from ipu_tutorials.profiling.plots import plot_memory, plot_placement, plot_timeline  # noqa: E402
from ipu_tutorials.simulator.memory import CATEGORIES  # noqa: E402
from ipu_tutorials.simulator.schedule import (HOST_DATA_TRACK, HOST_TRACK, Event,  # noqa: E402
                                              StageTimes, StepCosts, call_timeline)

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
    assert ([t.get_text() for t in ax.get_legend().get_texts()] ==
            ["host I/O", "forward", "backward", "weight update"])
    assert ax.get_title() == "one step"


def test_steps_keep_the_first_device_iterations_and_the_host_row_can_go():
    ax = plot_timeline(EVENTS, num_ipus=2, steps=1, show_host=False)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["IPU 0", "IPU 1"]
    assert "weight update" not in [t.get_text() for t in ax.get_legend().get_texts()]


# A pipelined call as the simulator times it: a 0.5 ms synchronisation, the host process
# handing the call's inputs over (12 ms) while it prepares the next call's data (20 ms),
# then one step of 2 stages and 3 micro-batches (30 µs of inputs, 10 µs of outputs).
STAGES = [StageTimes(ipu=i, forward=1e-4, backward=2e-4, send=0.0) for i in range(2)]
COSTS = StepCosts(host_in=1e-5, host_out=1e-5, host_latency=5e-4, update={0: 1e-4, 1: 1e-4},
                  host_data=2e-2, instance_host=1.2e-2)
CALL = call_timeline("pipelined", STAGES, COSTS, a=3, d=1, training=True)


def note(ax) -> str:
    return ax.get_legend().get_title().get_text().replace("\n", " ")


def test_the_device_view_starts_where_the_device_does_and_states_the_host_wait_in_numbers():
    # was wrong: one step of lesson 4 sat in the last millisecond of a 13 ms axis, after an
    # empty host wait nothing explained
    ax = plot_timeline(CALL, num_ipus=2, steps=1)
    step = [e for e in CALL if e.step == 0]  # its host input, device work and host output
    assert ax.get_xlim() == pytest.approx((min(e.start for e in step) * 1e3,
                                           max(e.end for e in step) * 1e3))
    assert ax.get_xlabel() == "simulated time since the call began (ms)"
    assert note(ax) == ("not drawn: the call's first 12.50 ms of 21.00 ms: host I/O 0.50 ms, "
                        "host's input hand-over 12.00 ms")
    assert len(ax.lines) >= 2  # the break marks at the axis's left end


def test_without_the_host_rows_the_view_starts_at_the_devices_first_box():
    ax = plot_timeline(CALL, num_ipus=2, show_host=False)
    first = min(e.start for e in CALL if e.ipu >= 0)
    assert ax.get_xlim()[0] == pytest.approx(first * 1e3)
    assert note(ax) == ("not drawn: the call's first 12.53 ms of 21.00 ms: host I/O 0.53 ms, "
                        "host's input hand-over 12.00 ms")  # the step's inputs included


def test_a_pipelined_step_is_marked_fill_main_and_flush():
    ax = plot_timeline(CALL, num_ipus=2, steps=1)
    assert ([t.get_text() for t in ax.texts if t.get_text() in ("fill", "main", "flush")] ==
            ["fill", "main", "flush"])


def test_the_whole_call_is_drawn_from_zero_and_overlapping_host_work_gets_a_lane_each():
    ax = plot_timeline(CALL, num_ipus=2)
    assert ax.get_xlim() == pytest.approx((0.0, max(e.end for e in CALL) * 1e3))
    assert ax.get_legend().get_title().get_text() == ""
    data_row = [t.get_text() for t in ax.get_yticklabels()].index("host data")
    heights = {c.get_label(): c.get_paths()[0].get_extents().height for c in ax.collections
               if c.get_paths()[0].get_extents().y0 >= data_row - 0.5}
    # the preparation of the next call's data runs alongside the hand-over: half a row each
    assert heights == pytest.approx({"host data preparation": 0.4, "host's input hand-over": 0.4})


def test_the_legend_names_only_the_kinds_drawn_and_no_poprun_in_one_process():
    # was wrong: every one-process run's legend showed a "poprun instance's input hand-over"
    ax = plot_timeline(CALL, num_ipus=2)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["host I/O", "host data preparation", "host's input hand-over", "forward",
                      "backward", "weight update"]
    assert not any("poprun" in label for label in legend)


def test_micro_batch_numbers_hide_when_a_shared_axis_makes_their_boxes_too_narrow():
    ax = plot_timeline(CALL, num_ipus=2, steps=1, show_host=False)
    shown = [t for t in ax.texts if t.get_text().isdigit()]
    assert shown and all(t.get_visible() for t in shown)
    low, high = ax.get_xlim()
    ax.set_xlim(low, low + 100 * (high - low))
    assert not any(t.get_visible() for t in shown)


def test_a_window_draws_that_part_of_the_call_and_says_what_came_before():
    device = [e for e in CALL if e.ipu >= 0]
    late = (device[len(device) // 2].start, max(e.end for e in device))
    ax = plot_timeline(CALL, num_ipus=2, show_host=False, window=late)
    assert ax.get_xlim() == pytest.approx((late[0] * 1e3, late[1] * 1e3))
    assert note(ax).endswith("(the host's work and the step's earlier cycles)")


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
