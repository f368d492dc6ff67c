"""How pytest-xdist shares the suite between workers (`pytest -n auto`; pyproject's addopts set
`--dist loadscope --no-loadscope-reorder`), and how long each test may take.

A notebook's cells run in order in one kernel, and a test file's module fixtures are built
once, so each notebook and each test file goes whole to one worker, except the files in
EACH_TEST: each of their tests opens and runs a whole lesson and they share nothing costly,
so they are handed out one by one. The longest work goes first (LONGEST_FIRST, from the
durations table in docs/developing.md), so that no worker is left with a long file at the end
while the others wait.

Every test is bounded by pytest-timeout (pyproject's `timeout`; a test that needs longer says so
with `@pytest.mark.timeout(SECONDS)`). A notebook cell is bounded by nbval's own
--nbval-cell-timeout, which says more, so pytest-timeout waits longer for it. pytest-timeout
interrupts a test from a SIGALRM handler, which cannot run while a thread holds the GIL inside
native code (torch 2.6's dist.destroy_process_group did, for ever): faulthandler's watchdog
thread, which needs no GIL, then prints every thread's stack and ends the process
`timeout_backstop` seconds later (docs/developing.md, "When a test runs out of time").
"""
from __future__ import annotations

import faulthandler
import os

import pytest

EACH_TEST = ("tests/browser/test_lessons.py",)
LONGEST_FIRST = ("tests/browser/test_lessons.py", "notebooks/",
                 "tests/browser/test_website_axe.py", "tests/course/test_grading.py",
                 "tests/reliability/", "tests/browser/", "tests/course/test_nbgrader.py",
                 "tests/distributed/", "tests/test_mnist_pipeline.py",
                 "tests/course/test_editions.py")
# nbval's default time for a kernel to start (its --nbval-kernel-startup-timeout), which a
# notebook's first cell waits for too; and time for nbval to report its own timeout first
NBVAL_KERNEL_STARTUP = 60
NBVAL_REPORT = 60
_STDERR = pytest.StashKey[int]()  # a copy of the real stderr, for faulthandler
# Tests that wait, on bounds of their own, longer than pyproject's `timeout` allows: their own
# bound names what was slow, so it must be the one to report, and pytest-timeout waits longer.
LONGER_LIMITS = {
    # The first browser test on each worker builds the course website, or waits for another
    # worker's build, which is bounded at 900 s (tests/browser/site_build.py, BUILD_SECONDS).
    "tests/browser/": 1200,
    # They wait for the processes they start for up to 240 s (a loaded 2-core machine starts
    # torch slowly: tests/reliability/test_processes.py, BOUND).
    "tests/reliability/": 420,
    # The first test's fixture runs docs/teaching.md's nbgrader commands one after another,
    # each bounded at 900 s (tests/course/test_nbgrader.py, COMMAND_SECONDS); on a loaded
    # 2-core machine the whole class took longer than 300 s.
    "tests/course/test_nbgrader.py": 1800,
}


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


def pytest_collection_modifyitems(config, items):
    """The longest work first; the order inside a file or notebook is kept (a stable sort).
    The tests of LONGER_LIMITS and the notebook cells (nbval_limit) get longer time limits."""
    items.sort(key=lambda item: _rank(item.nodeid))
    # `--timeout N` on the command line is every test's limit (0: none, under a debugger)
    if config.pluginmanager.hasplugin("timeout") and config.getoption("timeout") is None:
        _give_longer_limits(config, items)


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


def pytest_addoption(parser):
    parser.addini("timeout_backstop", "seconds past a test's pytest-timeout limit after which "
                  "faulthandler prints every thread's stack and ends the process", default="60")


def pytest_configure(config):
    # faulthandler writes to a file descriptor; pytest captures fd 2 during each test, and
    # what it captured is lost when the process ends, so keep a copy of the real stderr
    config.stash[_STDERR] = os.dup(2)


def pytest_unconfigure(config):
    faulthandler.cancel_dump_traceback_later()
    os.close(config.stash[_STDERR])


def nbval_limit(config) -> float:
    """pytest-timeout's limit for a notebook cell: past nbval's own limits, so that nbval,
    which names the cell and shows its output, is the one to report a slow cell."""
    cell = float(config.getoption("nbval_cell_timeout", default=2000))
    startup = float(config.getoption("nbval_kernel_startup_timeout",
                                     default=NBVAL_KERNEL_STARTUP))
    return cell + startup + NBVAL_REPORT


def _give_longer_limits(config, items) -> None:
    """A test's own @pytest.mark.timeout is kept; else LONGER_LIMITS, or nbval's for a cell."""
    for item in items:
        if item.get_closest_marker("timeout") is not None:
            continue
        limit = next((seconds for prefix, seconds in LONGER_LIMITS.items()
                      if item.nodeid.startswith(prefix)), None)
        if item.path.suffix == ".ipynb":
            limit = nbval_limit(config)
        if limit is not None:
            item.add_marker(pytest.mark.timeout(limit))


@pytest.hookimpl(optionalhook=True)
def pytest_timeout_set_timer(item, settings):
    """Beside pytest-timeout's own timer (this returns None, so it is set as well): the
    backstop for a test whose SIGALRM handler cannot run."""
    if settings.timeout:
        backstop = float(item.config.getini("timeout_backstop"))
        faulthandler.dump_traceback_later(settings.timeout + backstop, exit=True,
                                          file=item.config.stash[_STDERR])


@pytest.hookimpl(optionalhook=True)
def pytest_timeout_cancel_timer(item):
    faulthandler.cancel_dump_traceback_later()
