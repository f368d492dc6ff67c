"""Run one job in a few local processes that meet over loopback, collect their JSON, leave none.

The processes are forked from a fork server that has imported torch once (starting four
interpreters that each import torch would cost several seconds of CPU). Each one joins a
torch.distributed process group through a TCPStore that this process serves on a socket bound
to 127.0.0.1 (a free port unless one is given), runs `jobs.JOBS[job]` for its rank and sends
back plain JSON, never a pickle. Whatever happens (a failed rank, a run over time, Ctrl-C),
`run` stops every process before it returns or raises; and each process holds a pipe from this
one and exits the moment it closes, so none outlives a notebook whose kernel is killed. (The
fork server itself is multiprocessing's: it waits, idle, for the next run, and exits with the
process that started it.) From a script, call `run` under `if __name__ == "__main__":`, as any
multiprocessing program must.
"""
from __future__ import annotations

import datetime
import errno
import json
import multiprocessing
import multiprocessing.connection
import os
import signal
import socket
import threading
import time

import torch
import torch.distributed as dist

from ..support.rendezvous import listen, tcp_store

LOOPBACK = "127.0.0.1"
TIMEOUT = 120.0  # seconds for a whole run; the lesson's runs take a few
GRACE = 2.0  # seconds between SIGTERM and SIGKILL when stopping
JOBS_MODULE = "ipu_tutorials.torch_engines.jobs"


class EngineError(RuntimeError):
    """A run could not finish: a taken port, a rank that failed, or a run over its time."""


def check_device(device: str, world: int) -> None:
    """One process per GPU on CUDA (nccl needs a GPU each); any number of processes on CPU.

    Raises:
        ValueError: an unknown device, or fewer GPUs than processes.
    """
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' (gloo) or 'cuda' (nccl), got {device!r}")
    gpus = torch.cuda.device_count() if device == "cuda" else world
    if gpus < world:
        raise ValueError(f"device='cuda' runs one process per GPU (nccl needs one each): "
                         f"{world} processes need {world} GPUs, this machine has {gpus}; "
                         f"use device='cpu'")


def bind(port: int | None) -> socket.socket:
    """A listening socket on 127.0.0.1: the port given, or a free one the system picks.

    Raises:
        EngineError: the port is taken.
        ValueError: the port is not 1..65535.
    """
    if port is not None and not 0 < port <= 65535:
        raise ValueError(f"port must be between 1 and 65535 (or None for a free one), got {port}")
    try:
        return listen(LOOPBACK, port or 0)
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            raise EngineError(f"port {port} on {LOOPBACK} is already in use (another run or "
                              f"program holds it): pass another port, or port=None to let the "
                              f"system choose a free one") from None
        raise


def run(job: str, arguments: dict, world: int = 4, device: str = "cpu",
        port: int | None = None, timeout: float = TIMEOUT) -> list[dict]:
    """Run `jobs.JOBS[job](rank, world, device, **arguments)` in `world` processes.

    Returns:
        Each rank's result (plain JSON data), rank 0 first.
    Raises:
        EngineError: a rank failed (its first error line), the port is taken, or the run took
            longer than `timeout` seconds; every process has been stopped.
        ValueError: see check_device and bind.
    """
    check_device(device, world)
    listener = bind(port)
    port = listener.getsockname()[1]
    store = tcp_store(LOOPBACK, port, None, listener, timeout)  # it owns the socket from here
    context = _context()
    processes, readers, lifelines = [], [], []
    try:
        for rank in range(world):
            reader, writer = context.Pipe(duplex=False)  # the rank's result, to us
            watch, lifeline = context.Pipe(duplex=False)  # closes when we die, however we die
            process = context.Process(
                target=_worker, daemon=True, name=f"{job}-rank-{rank}",
                args=(job, rank, world, device, port, timeout, arguments, writer, watch))
            process.start()
            writer.close()  # the child holds its ends; EOF on `reader` means it is gone
            watch.close()
            processes.append(process)
            readers.append(reader)
            lifelines.append(lifeline)
        return _collect(job, readers, processes, time.monotonic() + timeout, timeout)
    finally:
        stop(processes)
        for connection in readers + lifelines:
            connection.close()
        del store


def _context():
    """The fork-server context, with torch and the jobs imported once in the server."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["torch", "torch.distributed", JOBS_MODULE])
    return context


def _collect(job: str, readers: list, processes: list, deadline: float,
             timeout: float) -> list[dict]:
    """Each rank's result; the first error (or a rank gone without one) stops the run."""
    results: dict[int, dict] = {}
    while len(results) < len(readers):
        waiting = [r for i, r in enumerate(readers) if i not in results]
        left = max(0.0, deadline - time.monotonic())
        ready = multiprocessing.connection.wait(waiting, timeout=left)
        if not ready:
            raise EngineError(f"the {job} run did not finish within {timeout:g} s; its "
                              f"{len(processes)} processes were stopped")
        for reader in ready:
            rank = readers.index(reader)
            try:
                message = json.loads(reader.recv_bytes().decode("utf-8"))
            except (EOFError, OSError):
                processes[rank].join(GRACE)
                raise EngineError(f"rank {rank} of the {job} run ended without a result (exit "
                                  f"code {processes[rank].exitcode})") from None
            if "error" in message:
                raise EngineError(f"rank {rank} of the {job} run failed: {message['error']}")
            results[rank] = message["result"]
    return [results[rank] for rank in range(len(readers))]


def stop(processes: list) -> None:
    """SIGTERM every live process, then SIGKILL what is left after GRACE seconds."""
    for process in processes:
        if process.is_alive():
            process.terminate()
    deadline = time.monotonic() + GRACE
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
        if process.is_alive():
            process.kill()
            process.join()


def _worker(job: str, rank: int, world: int, device: str, port: int, timeout: float,
            arguments: dict, writer, watch) -> None:
    """One rank: join the group, run the job, send the result as JSON (an error as one line)."""
    threading.Thread(target=_exit_when_closed, args=(watch,), daemon=True).start()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the launcher's to handle
    try:
        result = _run_rank(job, rank, world, device, port, timeout, arguments)
        writer.send_bytes(json.dumps({"result": result}).encode("utf-8"))
    except Exception as error:
        line = (str(error).strip().splitlines() or [""])[0][:300]
        writer.send_bytes(json.dumps({"error": f"{type(error).__name__}: {line}"}).encode("utf-8"))
        writer.close()
        # Wait for the launcher to stop us: exiting now would close our connections, and the
        # other ranks would report "connection closed" before the launcher reads this error.
        time.sleep(timeout)
        os._exit(1)


def _exit_when_closed(watch) -> None:
    """End this process as soon as the launcher's end of `watch` closes: the launcher has
    finished or died (the kernel closes a killed process's pipes)."""
    try:
        watch.recv_bytes()
    except (EOFError, OSError):
        pass
    os._exit(1)


def _run_rank(job: str, rank: int, world: int, device: str, port: int, timeout: float,
              arguments: dict):
    from . import jobs

    if "lo" in {name for _, name in socket.if_nameindex()}:
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # gloo's own sockets stay local
    torch.set_num_threads(1)  # the processes share the machine's cores
    _refuse_pickled_objects(dist)
    if device == "cuda":
        torch.cuda.set_device(rank)
    span = datetime.timedelta(seconds=timeout)
    store = tcp_store(LOOPBACK, port, world, None, timeout)
    dist.init_process_group("nccl" if device == "cuda" else "gloo", store=store, rank=rank,
                            world_size=world, timeout=span)
    result = jobs.JOBS[job](rank, world, torch.device(device, rank) if device == "cuda"
                            else torch.device("cpu"), **arguments)
    dist.destroy_process_group()  # not on an error: the others would see "connection closed"
    return result


def _refuse_pickled_objects(distributed) -> None:
    """Peers exchange tensors only: unpickling what a peer sent (torch's *_object_list
    collectives) is refused, so a process that reaches the port cannot run code here."""
    def refuse(*args, **kwargs):
        raise EngineError("a peer sent a pickled object, which lesson 16's runs refuse")

    distributed.distributed_c10d._tensor_to_object = refuse
