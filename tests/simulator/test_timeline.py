"""Timeline: a call's duration, busy time, utilisation and concurrency per IPU, and a
pipelined step's fill, main and flush."""
import pytest

from ipu_tutorials.simulator.schedule import HOST_TRACK, Event, StageTimes, pipelined_step, sharded_step
from ipu_tutorials.simulator.timeline import Timeline, pipeline_parts

EVENTS = [Event(HOST_TRACK, 0.0, 1.0, "host"),
          Event(0, 1.0, 2.0, "F", 0, 0), Event(1, 3.0, 2.0, "F", 0, 1),
          Event(0, 3.0, 1.0, "F", 1, 0), Event(0, 4.0, 0.5, "copy"),
          Event(1, 5.0, 3.0, "B", 0, 1), Event(0, 8.0, 2.0, "update")]


def test_duration_busy_and_utilisation():
    timeline = Timeline(EVENTS, num_ipus=2)
    assert timeline.duration == 10.0
    assert timeline.busy(0) == 5.0  # F, F and update; the copy is not compute
    assert timeline.busy(0, ("copy",)) == 0.5
    assert timeline.utilisation() == pytest.approx([0.5, 0.5])


def test_a_steps_device_span_runs_from_its_first_ipu_box_to_its_last():
    events = [Event(HOST_TRACK, 0.0, 1.0, "host", step=0), Event(0, 1.0, 2.0, "F", 0, 0, 0),
              Event(1, 3.0, 2.0, "B", 0, 1, 0), Event(HOST_TRACK, 5.0, 1.0, "host", step=0),
              Event(0, 6.0, 1.0, "F", 0, 0, 1)]
    assert Timeline(events, 2).device_span() == 4.0  # the host's I/O around it is not counted
    assert Timeline(events, 2).device_span(1) == 1.0 and Timeline(events, 2).device_span(2) == 0.0


def test_back_to_back_events_do_not_count_as_concurrent():
    timeline = Timeline(EVENTS, num_ipus=2)
    assert timeline.max_concurrency() == 2  # IPU 0's second F runs beside IPU 1's first
    serial = Timeline([Event(0, 0.0, 0.1 + 0.2, "F"), Event(1, 0.3, 1.0, "F")], num_ipus=2)
    assert serial.max_concurrency() == 1


def test_an_empty_timeline_and_the_text_form():
    assert Timeline([], 1).duration == 0.0 and Timeline([], 1).utilisation() == [0.0]
    assert repr(Timeline(EVENTS, 2)) == "Timeline(7 events on 2 IPU(s), 10000.000 ms)"
    assert [e.kind for e in Timeline(EVENTS, 2).of_kind("update", "host")] == ["host", "update"]


STAGES = [StageTimes(ipu=0, forward=1.0, backward=2.0, send=0.0),
          StageTimes(ipu=1, forward=1.0, backward=2.0, send=0.0)]


def test_a_pipelined_steps_parts_follow_its_cycles():
    # N = 2, A = 3 in training: P = 3 pipeline stages, 5 cycles: fill 2, main 1, flush 2.
    # Cycle lengths (the slowest IPU): F0 1, F1 | F0+B0 3, F2+B0 | F1+B1 3, B1 | F2+B2 3, B2 2
    events, end = pipelined_step(STAGES, 3, True, 10.0, step=0)
    assert pipeline_parts(events) == [("fill", 10.0, 14.0), ("main", 14.0, 17.0),
                                      ("flush", 17.0, 22.0)]
    assert end == 22.0


def test_every_step_has_its_parts_and_unpipelined_steps_have_none():
    first, t = pipelined_step(STAGES, 3, True, 0.0, step=0)
    second, _ = pipelined_step(STAGES, 3, True, t, step=1)
    assert [name for name, _, _ in pipeline_parts(first + second)] == ["fill", "main", "flush"] * 2
    assert pipeline_parts(sharded_step(STAGES, 3, True, 0.0, step=0)[0]) == []
    one_stage, _ = pipelined_step(STAGES[:1], 3, True, 0.0, step=0)
    assert pipeline_parts(one_stage) == []  # one stage has nothing to fill
