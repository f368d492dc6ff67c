"""Every reliability test is bounded: one that hangs fails with TimeoutError instead."""
import signal
import threading

import pytest

SECONDS_PER_TEST = 420


def _timed_out(signum, frame):
    raise TimeoutError(f"this test ran longer than {SECONDS_PER_TEST} s: something hangs")


@pytest.fixture(autouse=True)
def bounded():
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGALRM, _timed_out)
    signal.alarm(SECONDS_PER_TEST)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
