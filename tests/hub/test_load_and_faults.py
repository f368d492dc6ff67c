"""Forty learners on one hub: their servers start together, each fetches lesson 3 and submits
it with its own answer within the same minute through its JupyterLab (the calls the
Assignments tab makes), then submits a correction while the hub restarts; the instructor's collect finds
every submission, each with its own learner's answer. A kernel stuck in a silent loop is shut
down while a working kernel and every server stay. With IPU_HUB_FIGURES=FILE the measured
figures are written there as JSON (benchmarks/hub.md quotes them); nothing here is timed.
"""
from __future__ import annotations

import concurrent.futures
import json
import os
import statistics
import time
import urllib.error

import nbformat
import psutil
import pytest

from .hub import running_hub
from .kernels import execute, kernels, start_kernel

LEARNERS = 40
LESSON = "03_blocks_and_stages"
KERNEL_IDLE_SECONDS = 20
NOTEBOOK = f"/api/contents/{LESSON}/{LESSON}.ipynb"
RETRY_SECONDS = 300  # a submission refused while the hub restarts is tried again, this long


def marker(user: str, second: bool = False) -> str:
    return f"my_ipu_count = 8  # answered by {user}" + (", corrected" if second else "")


def answer(hub, user: str, second: bool = False) -> None:
    """Fetch the lesson and write this learner's own answer into it, through their server."""
    hub.request("POST", f"/user/{user}/assignments/fetch?course_id=ipu-course&assignment_id={LESSON}")
    model = json.loads(hub.request("GET", f"/user/{user}{NOTEBOOK}"))
    nb = nbformat.from_dict(model["content"])
    (cell,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "ipus_reserved-answer"]
    cell.source = marker(user, second)
    hub.request("PUT", f"/user/{user}{NOTEBOOK}", {"type": "notebook", "format": "json", "content": nb})


def submit(hub, user: str) -> float:
    """Submit through the learner's server, again while the hub is down; when it succeeded."""
    deadline = time.monotonic() + RETRY_SECONDS
    while True:
        try:
            reply = json.loads(hub.request(
                "POST", f"/user/{user}/assignments/submit?course_id=ipu-course&assignment_id={LESSON}"))
            assert reply["success"], reply
            return time.monotonic()
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


def memory_mib(pid: int) -> float:
    """Proportional set size (shared pages split among their users) of a process and its
    children, in MiB."""
    process = psutil.Process(pid)
    total = 0
    for p in [process, *process.children(recursive=True)]:
        total += p.memory_full_info().pss
    return total / 2**20


@pytest.fixture(scope="module")
def class_of_forty():
    with running_hub(LEARNERS, [LESSON], kernel_idle_seconds=KERNEL_IDLE_SECONDS) as hub:
        hub.nbgrader(hub.instructor, "generate_assignment", LESSON, cwd=hub.course)
        hub.nbgrader(hub.instructor, "release_assignment", LESSON, cwd=hub.course)
        figures = {"learners": LEARNERS}
        began = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(LEARNERS) as pool:
            starts = list(pool.map(hub.start_server, hub.learners))
        figures["all servers up s"] = time.monotonic() - began
        figures["server start s (median, max)"] = [statistics.median(starts), max(starts)]
        one = hub.start_server(hub.instructor)  # alone, on a machine at rest
        figures["one server start s, alone"] = one
        pids_before = {user: hub.server_pid(user) for user in hub.learners}
        figures["server MiB (median)"] = statistics.median(memory_mib(p) for p in pids_before.values())
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda user: answer(hub, user), hub.learners))

        # Every learner submits at once; then every learner submits again (a corrected
        # answer) while the hub goes down and comes back: their JupyterLab keeps running,
        # and a submission refused in between goes through once the hub is back.
        began = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(LEARNERS) as pool:
            first = list(pool.map(lambda user: submit(hub, user), hub.learners))
        figures["submission burst s"] = max(first) - began
        figures["submissions per minute"] = 60 * LEARNERS / (max(first) - began)
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda user: answer(hub, user, second=True), hub.learners))
        hub.stop()
        began = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(LEARNERS) as pool:
            waves = [pool.submit(submit, hub, user) for user in hub.learners]
            hub.start()
            again = [wave.result() for wave in waves]
        figures["hub restart and the second burst s"] = max(again) - began
        figures["submissions"] = len(first) + len(again)
        pids_after = {user: hub.server_pid(user) for user in hub.learners}
        hub.nbgrader(hub.instructor, "collect", LESSON, cwd=hub.course)
        yield hub, figures, pids_before, pids_after


def test_every_submission_is_collected_with_its_own_learners_answer(class_of_forty):
    hub = class_of_forty[0]
    submitted = os.path.join(hub.course, "submitted")
    assert sorted(os.listdir(submitted)) == sorted(hub.learners)
    for user in hub.learners:
        nb = nbformat.read(os.path.join(submitted, user, LESSON, f"{LESSON}.ipynb"), as_version=4)
        answers = [c.source for c in nb.cells
                   if c.metadata.get("nbgrader", {}).get("grade_id") == "ipus_reserved-answer"]
        assert answers == [marker(user, second=True)]  # the latest of the two


def test_a_hub_restart_mid_class_keeps_every_server_and_submission(class_of_forty):
    hub, figures, before, after = class_of_forty
    assert len(hub.starts) == 2
    inbound = os.listdir(os.path.join(hub.root, "exchange", "ipu-course", "inbound"))
    assert figures["submissions"] == len(inbound) == 2 * LEARNERS  # none lost
    assert sorted(name.split("+")[0] for name in inbound) == sorted(2 * hub.learners)
    assert after == before and None not in after.values()  # the same processes, still running
    for user in hub.learners[:3]:
        assert hub.api("GET", f"/users/{user}")["servers"][""]["ready"]


def test_a_runaway_kernel_is_culled_and_nothing_else(class_of_forty):
    hub, figures = class_of_forty[:2]
    runaway_user, working_user = hub.learners[:2]
    runaway, working = start_kernel(hub, runaway_user), start_kernel(hub, working_user)
    # a kernel with the course loaded: what one learner's kernel weighs
    execute(hub, working_user, working, "import torch\nfrom ipu_tutorials import poptorch\n"
            "from ipu_tutorials.classroom import exercises\nprint('ready')")
    kernel_pid = [p.pid for p in psutil.Process(hub.server_pid(working_user)).children()
                  if "ipykernel" in " ".join(p.cmdline())][0]
    figures["kernel with the course loaded MiB"] = memory_mib(kernel_pid)
    execute(hub, runaway_user, runaway, "while True:\n    pass", wait=False)
    execute(hub, working_user, working,
            f"import time\nfor i in range({KERNEL_IDLE_SECONDS * 4}):\n    print(i)\n    time.sleep(1)",
            wait=False)
    deadline = time.monotonic() + KERNEL_IDLE_SECONDS * 6
    while runaway in kernels(hub, runaway_user) and time.monotonic() < deadline:
        time.sleep(2)
    assert runaway not in kernels(hub, runaway_user)
    assert kernels(hub, working_user) == {working: "busy"}
    assert hub.server_pid(runaway_user) is not None
    assert "Culling 'busy' kernel" in hub.log()
    if os.environ.get("IPU_HUB_FIGURES"):
        with open(os.environ["IPU_HUB_FIGURES"], "w", encoding="utf-8") as f:
            json.dump(figures, f, indent=1)


def test_the_idle_culler_stops_a_server_nobody_uses():
    with running_hub(1, ["03"], idle_seconds=15) as hub:
        user = hub.learners[0]
        hub.start_server(user)
        deadline = time.monotonic() + 180
        while hub.api("GET", f"/users/{user}").get("servers") and time.monotonic() < deadline:
            time.sleep(2)
        assert not hub.api("GET", f"/users/{user}").get("servers")
        assert hub.server_pid(user) is None
