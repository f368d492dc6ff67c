"""The launcher: a taken port, a failed rank, a run over time and Ctrl-C each end in one clear
line (or the KeyboardInterrupt), and leave no process behind."""
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest
import torch

from ipu_tutorials.torch_engines import processes, runs

IMAGES, LABELS = torch.zeros(4000, 1, 28, 28), torch.zeros(4000, dtype=torch.long)


@pytest.fixture
def stopped(monkeypatch):
    """The processes each run stopped, caught as `stop` is handed them."""
    caught = []
    stop = processes.stop

    def catch(started):
        caught.extend(started)
        stop(started)

    monkeypatch.setattr(processes, "stop", catch)
    return caught


def assert_all_gone(started):
    assert len(started) == 4
    assert all(p.exitcode is not None and not os.path.exists(f"/proc/{p.pid}") for p in started)
    assert multiprocessing.active_children() == []


def test_a_taken_port_is_one_clear_line(stopped):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        port = holder.getsockname()[1]
        with pytest.raises(processes.EngineError) as error:
            runs.run_pipeline("GPipe", IMAGES[:80], LABELS[:80], micro_batches=10, steps=2,
                              port=port)
    assert str(error.value) == (f"port {port} on 127.0.0.1 is already in use (another run or "
                                f"program holds it): pass another port, or port=None to let the "
                                f"system choose a free one")
    assert stopped == []  # refused before any process started


def test_a_port_out_of_range_is_refused():
    with pytest.raises(ValueError, match="port must be between 1 and 65535"):
        processes.bind(70000)


def test_a_failing_rank_is_named_and_every_process_stopped(stopped):
    wrong_channels = torch.zeros(80, 3, 28, 28)
    first = r"^rank 0 of the pipeline run failed: RuntimeError: .*failed to run forward"
    with pytest.raises(processes.EngineError, match=first) as error:
        runs.run_pipeline("GPipe", wrong_channels, LABELS[:80], micro_batches=10, steps=2)
    assert "\n" not in str(error.value)
    assert_all_gone(stopped)


def test_a_run_over_its_time_is_stopped(stopped):
    with pytest.raises(processes.EngineError, match="the pipeline run did not finish within 4 s; "
                                                    "its 4 processes were stopped"):
        runs.run_pipeline("GPipe", IMAGES, LABELS, micro_batches=10, steps=400, timeout=4)
    assert_all_gone(stopped)


def test_ctrl_c_stops_every_process(stopped):
    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 4.0)
    try:
        with pytest.raises(KeyboardInterrupt):
            runs.run_pipeline("GPipe", IMAGES, LABELS, micro_batches=10, steps=400)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert_all_gone(stopped)


def test_cpu_takes_any_count_and_cuda_a_gpu_per_process():
    processes.check_device("cpu", 4)
    with pytest.raises(ValueError, match=r"'cpu' \(gloo\) or 'cuda' \(nccl\), got 'tpu'"):
        processes.check_device("tpu", 4)
    if torch.cuda.device_count() < 64:
        with pytest.raises(ValueError, match="64 processes need 64 GPUs"):
            processes.check_device("cuda", 64)


def test_a_pickled_object_from_a_peer_is_refused():
    assert hasattr(torch.distributed.distributed_c10d, "_tensor_to_object")  # what it replaces
    c10d = SimpleNamespace(_tensor_to_object=lambda *args: "unpickled")
    fake = SimpleNamespace(distributed_c10d=c10d)
    processes._refuse_pickled_objects(fake)
    with pytest.raises(processes.EngineError, match="a peer sent a pickled object"):
        fake.distributed_c10d._tensor_to_object(torch.zeros(4), 4)


# A launcher that never collects (so its ranks wait ten minutes: rank 0 fails and waits to be
# stopped, the others wait for rank 0), to be killed with SIGKILL.
LAUNCHER = '''
import time
import torch
from ipu_tutorials.torch_engines import processes, runs
if __name__ == "__main__":
    processes._collect = lambda *args: time.sleep(600)
    runs.run_pipeline("GPipe", torch.zeros(80, 3, 28, 28), torch.zeros(80, dtype=torch.long),
                      micro_batches=10, steps=2, timeout=600)
'''


def processes_started_from(folder) -> list[int]:
    """The fork server and the ranks of a launcher whose script lives in `folder` (its folder is
    on their sys.path, so in their command lines)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                command = handle.read().decode(errors="replace")
        except OSError:
            continue
        if "forkserver" in command and str(folder) in command:
            found.append(int(pid))
    return found


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the processes in /proc")
def test_a_killed_launcher_leaves_no_process(tmp_path):
    script = tmp_path / "launcher.py"
    script.write_text(LAUNCHER)
    launcher = subprocess.Popen([sys.executable, str(script)], env={**os.environ,
                                "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        deadline = time.monotonic() + 120
        while len(processes_started_from(tmp_path)) < 5 and time.monotonic() < deadline:
            time.sleep(0.5)  # the fork server and its four ranks
        assert len(processes_started_from(tmp_path)) == 5, "the run did not start"
    finally:
        launcher.kill()  # SIGKILL: no finally, no atexit in the launcher
        launcher.wait()
    deadline = time.monotonic() + 20
    while processes_started_from(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_started_from(tmp_path) == []
