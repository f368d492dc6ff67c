"""Reports: written by autoReport or enableProfiling, loaded back, drawn."""
import json

import matplotlib
import pytest

from ipu_tutorials import poptorch
from ipu_tutorials.profiling import Report, load_report, plot_memory, plot_timeline

matplotlib.use("Agg")


def test_a_saved_report_loads_back_identical(tmp_path, trained):
    report = trained(poptorch.Options()).report()
    loaded = load_report(report.save(str(tmp_path)))
    assert loaded.summary == json.loads(json.dumps(report.summary, default=str))
    assert len(loaded.events) == len(report.events)
    assert loaded.timeline.duration == pytest.approx(report.timeline.duration)


def test_trace_has_a_track_per_ipu_the_host_and_its_data_preparation(tmp_path, trained):
    trained(poptorch.Options()).report().save(str(tmp_path))
    trace = json.loads((tmp_path / "trace.json").read_text())
    names = {e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    assert names == {"IPU 0", "IPU 1", "IPU 2", "IPU 3", "Host", "Host data preparation"}
    data = [e for e in trace["traceEvents"] if e.get("cat") == "data"]
    assert len(data) == 1 and data[0]["dur"] > 0
    forward = [e for e in trace["traceEvents"] if e.get("cat") == "F"]
    assert len(forward) == 4 * 7 and all(e["ph"] == "X" and e["dur"] > 0 for e in forward)


def test_summary_holds_placement_memory_and_throughput(trained):
    summary = trained(poptorch.Options()).report().summary
    assert [s["blocks"] for s in summary["placement"]["stages"]] == [["B1"], ["B2"], ["B3"], ["B4"]]
    assert len(summary["memory"]) == 4
    assert summary["schedule"]["samples_per_second"] > 0
    assert summary["batching"]["samples_per_call"] == 56


def test_loading_something_else_fails_clearly(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a report directory"):
        Report.load(str(tmp_path))


def test_plots_draw_every_event_and_every_ipu(trained):
    report = trained(poptorch.Options()).report()
    ax = plot_timeline(report.events, 4)
    boxes = sum(len(c.get_paths()) for c in ax.collections)  # one rectangle per event
    assert boxes == len([e for e in report.events if e.duration > 0])
    assert [t.get_text() for t in ax.get_yticklabels()] == ["IPU 0", "IPU 1", "IPU 2", "IPU 3", "host",
                                                            "host data"]
    ax = plot_memory(report.memory)
    assert len(ax.patches) == 4 * 8  # IPUs x memory categories


def test_timeline_can_show_the_first_steps_only(trained):
    opts = poptorch.Options().deviceIterations(32)  # the call's input hand-over comes first
    report = trained(opts).report()
    whole = report.plot_timeline().get_xlim()[1]
    first = report.plot_timeline(steps=1).get_xlim()[1]
    # both views hold the call's opening host work (latency, the instance's input hand-over);
    # the first-step view drops the other 31 steps
    assert first < 0.75 * whole
