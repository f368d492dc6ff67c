"""Every reliability test may take SECONDS_PER_TEST, longer than the suite's default limit
(pyproject's `timeout`): its own waits are bounded at 240 s (a loaded 2-core machine starts
torch slowly) and must be the ones to report. One that hangs fails with pytest-timeout's
report, every thread's stack (conftest.py at the top)."""
from pathlib import Path

import pytest

SECONDS_PER_TEST = 420
HERE = Path(__file__).parent


def pytest_collection_modifyitems(items):
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.timeout(SECONDS_PER_TEST))
