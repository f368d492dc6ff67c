"""Chrome Trace Event JSON: one track per IPU plus the host's, microseconds, and back again."""
import json

import pytest

from ipu_tutorials.profiling.trace import DATA_THREAD, HOST_THREAD, from_trace, to_trace
from ipu_tutorials.simulator.schedule import HOST_DATA_TRACK, HOST_TRACK, Event

EVENTS = [Event(HOST_TRACK, 0.0, 2e-6, "host"), Event(HOST_DATA_TRACK, 0.0, 1e-6, "data"),
          Event(0, 2e-6, 1.5e-6, "F", micro_batch=0, stage=0, step=0),
          Event(1, 3.5e-6, 1e-6, "B", micro_batch=0, stage=1, step=0, cycle=1)]
MEMORY = [{"ipu": 0, "weights": 100, "code": 50, "total": 150, "capacity": 1000}]


def test_tracks_names_and_microseconds():
    trace = to_trace(EVENTS, num_ipus=2, memory=MEMORY, title="training")
    names = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    assert names == {0: "IPU 0", 1: "IPU 1", HOST_THREAD: "Host",
                     DATA_THREAD: "Host data preparation"}
    forward = next(e for e in trace["traceEvents"] if e.get("cat") == "F")
    assert forward["name"] == "F0 (stage 0)" and forward["tid"] == 0
    assert (forward["ts"], forward["dur"]) == pytest.approx((2.0, 1.5))
    counter = next(e for e in trace["traceEvents"] if e["ph"] == "C")
    assert counter["args"] == {"weights": 100, "code": 50}  # the stacked parts, not the totals


def test_a_trace_reads_back_as_the_same_events_through_json():
    trace = json.loads(json.dumps(to_trace(EVENTS, 2, MEMORY, "training")))
    back = from_trace(trace)
    assert ([(e.ipu, e.kind, e.micro_batch, e.stage, e.step, e.cycle) for e in back] ==
            [(e.ipu, e.kind, e.micro_batch, e.stage, e.step, e.cycle) for e in EVENTS])
    times = [t for e in back for t in (e.start, e.duration)]
    assert times == pytest.approx([t for e in EVENTS for t in (e.start, e.duration)])
