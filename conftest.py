"""How pytest-xdist shares the suite between workers (`pytest -n auto`; pyproject's addopts set
`--dist loadscope --no-loadscope-reorder`).

A notebook's cells run in order in one kernel, and a test file's module fixtures are built
once, so each notebook and each test file goes whole to one worker, except the files in
EACH_TEST: each of their tests opens and runs a whole lesson and they share nothing costly,
so they are handed out one by one. The longest work goes first (LONGEST_FIRST, from the
durations table in docs/developing.md), so that no worker is left with a long file at the end
while the others wait.
"""
from __future__ import annotations

import os

EACH_TEST = ("tests/browser/test_lessons.py",)
LONGEST_FIRST = ("tests/browser/test_lessons.py", "notebooks/",
                 "tests/browser/test_website_axe.py", "tests/course/test_grading.py",
                 "tests/reliability/", "tests/browser/", "tests/course/test_nbgrader.py",
                 "tests/distributed/", "tests/test_mnist_pipeline.py",
                 "tests/course/test_editions.py")


def pytest_xdist_auto_num_workers(config) -> int:
    """`-n auto`: one worker more than there are cores. A worker also waits (for JupyterLab and
    Chromium to start, a kernel to reply, a time limit to run out), and a third worker on two
    cores fills those waits: the whole suite took 655 s against 690 s with two (measured side by
    side, docs/developing.md)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (cores or 1) + 1


def _rank(nodeid: str) -> int:
    return next((i for i, prefix in enumerate(LONGEST_FIRST) if nodeid.startswith(prefix)),
                len(LONGEST_FIRST))


def pytest_collection_modifyitems(items):
    """The longest work first; the order inside a file or notebook is kept (a stable sort)."""
    items.sort(key=lambda item: _rank(item.nodeid))


def pytest_xdist_make_scheduler(config, log):
    if config.getoption("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Scheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.split("::", 1)[0] in EACH_TEST:
                return nodeid
            return super()._split_scope(nodeid)

    return Scheduling(config, log)
