"""Timeline: a call's duration, busy time, utilisation and concurrency per IPU."""
import pytest

from ipu_tutorials.simulator.schedule import HOST_TRACK, Event
from ipu_tutorials.simulator.timeline import Timeline

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


def test_back_to_back_events_do_not_count_as_concurrent():
    timeline = Timeline(EVENTS, num_ipus=2)
    assert timeline.max_concurrency() == 2  # IPU 0's second F runs beside IPU 1's first
    serial = Timeline([Event(0, 0.0, 0.1 + 0.2, "F"), Event(1, 0.3, 1.0, "F")], num_ipus=2)
    assert serial.max_concurrency() == 1


def test_an_empty_timeline_and_the_text_form():
    assert Timeline([], 1).duration == 0.0 and Timeline([], 1).utilisation() == [0.0]
    assert repr(Timeline(EVENTS, 2)) == "Timeline(7 events on 2 IPU(s), 10000.000 ms)"
    assert [e.kind for e in Timeline(EVENTS, 2).of_kind("update", "host")] == ["host", "update"]
