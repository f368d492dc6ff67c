"""_launch.py: instances start in groups of their own, a failure stops the rest, none is left."""
import sys

import pytest

from ipu_tutorials.distributed import _launch

SLEEPER = [sys.executable, "-c", "import os, sys, time\n"
           "print('rank', os.environ['RANK'], flush=True)\n"
           "time.sleep(float(os.environ['SECONDS_TO_LIVE'])); sys.exit(int(os.environ['CODE']))"]


def environments(*lives):
    return [{"RANK": str(rank), "SECONDS_TO_LIVE": str(seconds), "CODE": str(code)}
            for rank, (seconds, code) in enumerate(lives)]


def test_a_failing_instance_stops_the_others_and_is_reported_first():
    processes = _launch.start(SLEEPER, environments((60, 0), (0, 3)))
    failures = _launch.supervise(processes, [0, 1], poll=0.05)
    assert failures[0] == (1, 3)  # the one that failed, then the one stopped by SIGTERM
    assert failures[1:] == [(0, -15)] and all(p.poll() is not None for p in processes)


def test_every_line_is_relayed_tagged_with_its_rank(capfd):
    processes = _launch.start(SLEEPER, environments((0, 0), (0, 0)))
    for thread in _launch.relay(processes, [0, 1], shown=None):
        thread.join(timeout=30)
    assert _launch.supervise(processes, [0, 1]) == []
    assert sorted(capfd.readouterr().out.splitlines()) == ["[1,0]: rank 0", "[1,1]: rank 1"]


def test_a_program_that_does_not_exist_is_one_error_naming_it():
    with pytest.raises(FileNotFoundError, match=r"cannot start 'no-such-program': No such file"):
        _launch.start(["no-such-program"], environments((0, 0)))


def test_failures_are_described_one_line_each():
    assert _launch.describe([(1, 3), (0, -9)], {0: 100, 1: 101}).splitlines() == [
        "poprun: instance 1 ended (exit code 3, pid 101)",
        "poprun: instance 0 ended (killed by signal 9, pid 100)",
        "poprun: the run failed; the instances' own messages above say why"]
