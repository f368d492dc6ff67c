"""conftest.py's bounds: a test that hangs fails with every thread's stack, even one holding the
GIL in native code, under pytest-xdist; a notebook cell is left to nbval's own limit."""
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import pytest_timeout  # noqa: F401  (the test extra's; without it the run below would hang)

ROOT = Path(__file__).resolve().parents[1]

HANGING_TESTS = '''
import ctypes, threading, time

def test_sleeps_in_python():
    threading.Thread(target=time.sleep, args=(60,), name="helper", daemon=True).start()
    time.sleep(60)

def test_holds_the_gil_in_native_code():
    mutex, libc = ctypes.create_string_buffer(64), ctypes.PyDLL(None)
    libc.pthread_mutex_lock(mutex)
    libc.pthread_mutex_lock(mutex)  # a default mutex locked twice: never returns

def test_that_passes():
    pass
'''


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> str:
    """The hanging tests and a slow notebook cell, run as the suite runs (two xdist workers,
    this repository's conftest.py) with a 2 s limit and a 2 s backstop; the output."""
    folder = tmp_path_factory.mktemp("bounds")
    (folder / "conftest.py").write_text((ROOT / "conftest.py").read_text())
    (folder / "test_hanging.py").write_text(HANGING_TESTS)
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import time\n"
                                                                         "time.sleep(8)")])
    nbformat.write(notebook, folder / "slow.ipynb")
    (folder / "pytest.ini").write_text("[pytest]\ntimeout = 2\ntimeout_backstop = 2\n")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "-p", "no:cacheprovider", "--nbval",
         "--nbval-current-env", "--nbval-cell-timeout=4", "test_hanging.py", "slow.ipynb"],
        cwd=folder, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), os.environ.get(
            "PYTHONPATH", "")])})
    assert result.returncode == 1
    return result.stdout + result.stderr


def test_a_test_that_hangs_in_python_fails_with_the_other_threads_stacks(run):
    assert "FAILED test_hanging.py::test_sleeps_in_python" in run
    assert "Failed: Timeout (>2.0s) from pytest-timeout." in run
    assert "Stack of helper" in run


def test_a_test_holding_the_gil_is_ended_by_the_backstop_with_its_stack(run):
    assert re.search(r"worker 'gw\d' crashed while running "
                     r"'test_hanging.py::test_holds_the_gil_in_native_code'", run)
    assert "Timeout (0:00:04)!" in run  # faulthandler's watchdog: the 2 s limit + 2 s backstop
    assert "line 11 in test_holds_the_gil_in_native_code" in run


def test_a_notebook_cell_is_stopped_by_nbval_not_pytest_timeout(run):
    assert "Cell 0: Timeout of 4 seconds exceeded executing cell" in run
    assert "slow.ipynb::Cell 0 - Failed: Timeout" not in run


def test_the_other_tests_run_on(run):
    assert "1 passed" in run
