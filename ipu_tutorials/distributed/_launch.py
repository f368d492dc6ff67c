"""poprun's process handling: start the instances, relay their output, and never leave one behind.

Each instance runs in a process group of its own (poprun signals the whole group, so the
instance's own children go too) and, on Linux, is killed by the kernel the moment poprun dies
(PR_SET_PDEATHSIG), even when poprun itself is killed with SIGKILL; elsewhere the instance
watches its parent with a thread (`watch_launcher`). When one instance fails, the others get
SIGTERM (popdist turns it into an InstanceError naming the failed one) and, after a grace
period, SIGKILL.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import subprocess
import sys
import threading
import time

LAUNCHER_PID_ENV = "IPU_TUTORIALS_POPRUN_PID"
GRACE_SECONDS = 5.0  # after SIGTERM, before SIGKILL: time to print which instance failed
_PR_SET_PDEATHSIG = 1


def _prctl():
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def _die_with(parent: int, prctl):
    """Runs in the child before exec: die when poprun dies (also if it already has)."""
    def setup():
        os.setpgid(0, 0)  # a group of its own
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)
    return setup


def start(command: list[str], environments: list[dict[str, str]]) -> list[subprocess.Popen]:
    """Start one process per environment, each in its own process group, output piped."""
    setup = _die_with(os.getpid(), _prctl())
    processes = []
    try:
        for env in environments:
            processes.append(subprocess.Popen(
                command, env={**os.environ, **env, LAUNCHER_PID_ENV: str(os.getpid())},
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                preexec_fn=setup))
    except OSError as error:  # the program does not exist or cannot run: end those started
        stop(processes, grace=0.0)
        raise OSError(error.errno, f"cannot start {command[0]!r}: {error.strerror}") from None
    return processes


def relay(processes: list[subprocess.Popen], ranks: list[int], shown: int | None,
          prefix: str = "[1,{rank}]: ") -> list[threading.Thread]:
    """Copy every line of every instance to poprun's stdout/stderr, tagged with its rank."""
    threads = []
    for process, rank in zip(processes, ranks):
        for stream, target in ((process.stdout, sys.stdout), (process.stderr, sys.stderr)):
            thread = threading.Thread(target=_copy_lines, daemon=True, args=(
                stream, target, prefix.format(rank=rank), shown in (None, rank)))
            thread.start()
            threads.append(thread)
    return threads


def _copy_lines(stream, target, prefix: str, show: bool) -> None:
    for line in iter(stream.readline, b""):
        if show:
            target.write(prefix + line.decode("utf-8", "replace").rstrip("\n") + "\n")
            target.flush()
    stream.close()


def supervise(processes: list[subprocess.Popen], ranks: list[int],
              poll: float = 0.1) -> list[tuple[int, int]]:
    """Wait for every instance; when one fails, stop the rest. Returns the failures in the
    order they happened, as (rank, return code), the first one first."""
    failures: list[tuple[int, int]] = []
    while any(p.returncode is None for p in processes):
        for process, rank in zip(processes, ranks):
            if process.returncode is None and process.poll() is not None and process.returncode:
                failures.append((rank, process.returncode))
        if failures:
            stop(processes)
            failures += [(r, p.returncode) for p, r in zip(processes, ranks)
                         if p.returncode and (r, p.returncode) not in failures]
            break
        time.sleep(poll)
    return failures


def stop(processes: list[subprocess.Popen], grace: float = GRACE_SECONDS) -> None:
    """SIGTERM every live instance's group, then SIGKILL what is left after `grace` seconds."""
    _signal_groups(processes, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(p.poll() is None for p in processes):
        time.sleep(0.05)
    _signal_groups(processes, signal.SIGKILL, everyone=True)
    for process in processes:
        process.wait()


def _signal_groups(processes, signum: int, everyone: bool = False) -> None:
    for process in processes:
        if everyone or process.poll() is None:
            try:
                os.killpg(process.pid, signum)  # the group: the instance and its children
            except (ProcessLookupError, PermissionError):
                pass


def describe(failures: list[tuple[int, int]], pids: dict[int, int]) -> str:
    """One line per instance that ended badly, then where to look for why."""
    lines = []
    for rank, code in failures:
        how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        lines.append(f"poprun: instance {rank} ended ({how}, pid {pids[rank]})")
    return "\n".join(lines + ["poprun: the run failed; the instances' own messages above say why"])


def watch_launcher(poll: float = 0.5) -> None:
    """In an instance: end this process group if poprun goes away (where prctl is missing)."""
    launcher = os.environ.get(LAUNCHER_PID_ENV)
    if not launcher or not launcher.isdigit() or _prctl() is not None:
        return

    def watch():
        while os.getppid() == int(launcher):
            time.sleep(poll)
        os.killpg(os.getpgrp(), signal.SIGKILL)

    threading.Thread(target=watch, daemon=True, name="poprun-watcher").start()
