"""Grade a class: run each submitted notebook in a fresh kernel, score its exercise checks.

    ipu-course grade course/submitted [--course DIR] [--out DIR]

SUBMISSIONS holds the learners' notebooks (the student edition, or the learner's notebook from
notebooks/, as they worked in it), either as SUBMISSIONS/<learner>/<any path>/<lesson>.ipynb
(nbgrader's submitted/ layout) or as SUBMISSIONS/<learner>.ipynb. The course directory
(--course, by default the folder that holds SUBMISSIONS) is the one the editions tool wrote:
the check cells are restored from its instructor editions, source/<lesson>/<lesson>.ipynb, as
nbgrader restores locked cells, so an edited check cell changes nothing. Each notebook runs in
its own process and kernel, with network connections refused, a time limit per cell
(interrupted, the next cells still run) and one for the whole notebook (killed: its exercises
score 0); the grader's run always goes on. Writes DIR/gradebook.csv (learner, lesson,
exercise, points, feedback) and DIR/summary.html (a bar per exercise, every learner's score and
the feedback they saw); DIR is --out, by default the course directory's grades/.
"""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

import nbformat

from ..classroom.exercises.base import is_verdict
from ..support.atomic_io import atomic_open
from . import editions
from .gradebook import write_summary

CELL_TIMEOUT, NOTEBOOK_TIMEOUT = editions.CELL_TIMEOUT, 1800  # seconds
# Run first in every submission's kernel: the learner's code reaches no other machine (a
# guard against downloads, not a sandbox: the kernel's own sockets are ZeroMQ's, not these).
NO_NETWORK = '''
import socket as _socket
def _local(address):
    host = address[0] if isinstance(address, tuple) else address
    return not isinstance(address, tuple) or host in ("localhost", "127.0.0.1", "::1")
def _guard(connect):
    def guarded(self, address, *args):
        if self.family != getattr(_socket, "AF_UNIX", None) and not _local(address):
            raise OSError(f"no network while grading (connect to {address!r} refused)")
        return connect(self, address, *args)
    return guarded
_socket.socket.connect = _guard(_socket.socket.connect)
_socket.socket.connect_ex = _guard(_socket.socket.connect_ex)
del _guard
'''
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
               "http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9",
               "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
               "no_proxy": "", "NO_PROXY": ""}


@dataclasses.dataclass(frozen=True)
class Score:
    """One learner's result on one exercise: points and the feedback the learner saw."""

    learner: str
    lesson: str
    exercise: str  # the exercise's grade_id
    title: str
    points: int
    max_points: int
    feedback: str


def submissions(folder: str) -> list[tuple[str, str]]:
    """(learner, notebook path) for every notebook under `folder`, in a stable order."""
    found = []
    for directory, subfolders, files in os.walk(folder):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith("."))
        for name in sorted(f for f in files if f.endswith(".ipynb")):
            path = os.path.join(directory, name)
            parts = os.path.relpath(path, folder).split(os.sep)
            found.append((parts[0] if len(parts) > 1 else name[:-6], path))
    return sorted(found)


def lesson_of(nb: nbformat.NotebookNode) -> str:
    """The lesson a notebook is a copy of, from the metadata every edition carries.

    Raises:
        ValueError: the notebook is not a copy of a lesson.
    """
    source = nb.metadata.get("ipu_tutorials", {}).get("source", "")
    if not source.startswith("walkthroughs/"):
        raise ValueError("not a lesson of this course (no ipu_tutorials.source in its metadata)")
    return os.path.splitext(os.path.basename(source))[0]


def instructor(course: str, lesson: str) -> nbformat.NotebookNode:
    """The lesson's instructor edition in the course directory.

    Raises:
        ValueError: the course directory has no instructor edition of the lesson.
    """
    path = os.path.join(course, "source", lesson, f"{lesson}.ipynb")
    if not os.path.exists(path):
        raise ValueError(f"no instructor edition of {lesson} at {path}: write it with "
                         f"ipu-course editions {lesson} --out {course}")
    return nbformat.read(path, as_version=4)


def check_cells(nb: nbformat.NotebookNode, graded: dict) -> dict:
    """{grade_id: cell} of a submission's check cells, found by their nbgrader grade_id or,
    in a copy of the learner's notebook without nbgrader metadata, by their cell id."""
    ids = {g.check_id: name for name, g in graded.items()}
    found = {}
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id") or ids.get(cell.get("id"))
        if grade_id in graded and cell.metadata.get("nbgrader", {}).get("grade", True):
            found[grade_id] = cell
    return found


def restore_checks(nb: nbformat.NotebookNode, reference: nbformat.NotebookNode) -> dict:
    """Give each check cell of `nb` the instructor's source; returns {grade_id: Graded} of the
    lesson's exercises."""
    graded = {g.name: g for g in editions.exercises_of(reference)}
    for grade_id, cell in check_cells(nb, graded).items():
        cell.source = reference.cells[graded[grade_id].check_cell].source
        cell.cell_type = "code"
    return graded


def seen_feedback(cell) -> str:
    """What the learner saw under a check cell: the feedback, or the error it raised."""
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            return f"Not yet: the cell raised {output['ename']}: {output['evalue']}"[:500]
        text = output.get("data", {}).get("text/plain", "") or output.get("text", "")
        if is_verdict(text):
            return " ".join(text.split())
    return "Not yet: the check did not run (the notebook stopped before it)."


def score_notebook(learner: str, nb: nbformat.NotebookNode, lesson: str, graded: dict,
                   stopped: str | None) -> list[Score]:
    """Scores from an executed notebook (or none of it ran: `stopped` says why)."""
    cells = check_cells(nb, graded)
    scores = []
    for grade_id, g in graded.items():
        cell = cells.get(grade_id)
        if stopped:
            feedback = f"Not yet: {stopped}"
        elif cell is None:
            feedback = "Not yet: the check cell was deleted from the notebook."
        else:
            feedback = seen_feedback(cell)
        correct = feedback.startswith("Correct")
        scores.append(Score(learner, lesson, grade_id, g.exercise.title,
                            g.points if correct else 0, g.points, feedback))
    return scores


def run_in_child(nb: nbformat.NotebookNode, workdir: str, cell_timeout: int,
                 timeout: int) -> tuple[nbformat.NotebookNode | None, str | None]:
    """Execute `nb` in a child process and a fresh kernel; (executed notebook, None), or
    (None, why it stopped) when it crashed the kernel or ran out of time."""
    source, executed = os.path.join(workdir, "in.ipynb"), os.path.join(workdir, "out.ipynb")
    pidfile = os.path.join(workdir, "kernel.pid")
    nbformat.write(nb, source)
    command = [sys.executable, "-m", "ipu_tutorials.course.grading", "--execute", source,
               executed, pidfile, str(cell_timeout)]
    child = subprocess.Popen(command, start_new_session=True, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    try:
        _, errors = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(child.pid, pidfile)
        child.communicate()
        return None, f"the notebook did not finish within {timeout} s (an endless loop?)."
    _kill(None, pidfile)  # a kernel left behind by a crashed child
    if child.returncode != 0 or not os.path.exists(executed):
        last = (errors.strip().splitlines() or ["no message"])[-1]
        return None, f"the notebook could not run to the end: {last[:300]}"
    return nbformat.read(executed, as_version=4), None


def _kill(group: int | None, pidfile: str) -> None:
    """Kill the child's process group and the kernel's (the kernel runs in its own session)."""
    groups = [group] if group else []
    if os.path.exists(pidfile):
        with open(pidfile) as f:
            groups.append(int(f.read()))
    for pid in groups:
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def execute(source: str, executed: str, pidfile: str, cell_timeout: int) -> None:
    """In the child: run the notebook in a new kernel, errors kept as outputs."""
    from nbclient import NotebookClient

    nb = nbformat.read(source, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(NO_NETWORK))
    workdir = os.path.dirname(source)
    finished = threading.Event()  # set before nbclient shuts the kernel down
    last = max(i for i, cell in enumerate(nb.cells) if cell.cell_type == "code")

    def started(**_) -> None:  # the kernel is up: note its pid, watch that it stays alive
        process = client.km.provisioner.process
        with open(pidfile, "w") as f:
            f.write(str(process.pid))
        threading.Thread(target=_exit_when_dead, args=(process, finished), daemon=True).start()

    client = NotebookClient(nb, kernel_name="python3", timeout=cell_timeout, allow_errors=True,
                            interrupt_on_timeout=True, on_notebook_start=started,
                            on_cell_executed=lambda cell_index, **_: cell_index == last
                            and finished.set(),
                            resources={"metadata": {"path": workdir}})
    try:
        client.execute(env={**os.environ, **OFFLINE_ENV})
    finally:
        finished.set()
    nb.cells.pop(0)
    nbformat.write(nb, executed)


def _exit_when_dead(process, finished: threading.Event) -> None:
    """End the child when its kernel dies (a cell crashed it): nbclient may wait on a dead
    kernel until the notebook's time limit."""
    while not finished.wait(0.5):
        if process.poll() is not None:
            print(f"the kernel died (exit code {process.poll()}): a cell crashed it",
                  file=sys.stderr, flush=True)
            os._exit(3)


def grade_one(learner: str, path: str, course: str, cell_timeout: int,
              timeout: int) -> list[Score]:
    try:
        nb = nbformat.read(path, as_version=4)
        reference = instructor(course, lesson_of(nb))
    except (ValueError, OSError, json.JSONDecodeError, nbformat.reader.NotJSONError) as error:
        print(f"skipped {path}: {error}", file=sys.stderr)
        return []
    lesson = lesson_of(nb)
    graded = restore_checks(nb, reference)
    with tempfile.TemporaryDirectory(prefix="grading-") as workdir:
        executed, stopped = run_in_child(nb, workdir, cell_timeout, timeout)
    return score_notebook(learner, executed or nb, lesson, graded, stopped)


def grade(folder: str, out: str, course: str | None = None, cell_timeout: int = CELL_TIMEOUT,
          timeout: int = NOTEBOOK_TIMEOUT) -> list[Score]:
    """Grade every submission under `folder` against the course directory `course` (by default
    the folder that holds `folder`); writes out/gradebook.csv and out/summary.html."""
    course = course or os.path.dirname(os.path.abspath(folder))
    scores = []
    for learner, path in submissions(folder):
        scores += grade_one(learner, path, course, cell_timeout, timeout)
        print(f"graded {learner}: {os.path.relpath(path, folder)}", file=sys.stderr)
    os.makedirs(out, exist_ok=True)
    write_csv(scores, os.path.join(out, "gradebook.csv"))
    write_summary(scores, os.path.join(out, "summary.html"))
    return scores


def write_csv(scores: list[Score], path: str) -> None:
    fields = [f.name for f in dataclasses.fields(Score)]
    buffer = io.StringIO(newline="")
    writer = csv.DictWriter(buffer, fieldnames=fields)
    writer.writeheader()
    writer.writerows(dataclasses.asdict(s) for s in scores)
    with atomic_open(path) as f:  # an ordinary file mode, unlike mkstemp's 0600
        f.write(buffer.getvalue())


if __name__ == "__main__":  # the child process of run_in_child (`ipu-course grade` grades)
    if sys.argv[1:2] != ["--execute"] or len(sys.argv) != 6:
        sys.exit("ipu_tutorials.course.grading runs one submission for the grader: grade a class "
                 "with ipu-course grade SUBMISSIONS")
    execute(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
