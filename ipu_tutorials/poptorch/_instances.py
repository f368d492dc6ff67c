"""Several host processes ("instances") as one replicated run, over torch.distributed (gloo).

opts.Distributed.configureProcessId(i, n) (or popdist, under poprun) makes each process drive
its own replicas; this module joins the processes, checks at compile that they agree, gives
them instance 0's weights, and sums the gradients of all replicas with all_reduce.

Failures are turned into errors that name the instance: one that never joins (bounded by
IPU_TUTORIALS_INSTANCE_TIMEOUT seconds), one that exits mid-run (its pid is gone), one that
stops answering (the collective times out).
"""
from __future__ import annotations

import datetime
import ipaddress
import json
import os
import signal
import socket
import threading
import time

import torch
import torch.distributed as dist

from ..support import rendezvous
from ..errors import Error
from ._collective_tensors import held_until_released
from ._json_collectives import all_gather_json

TIMEOUT_ENV = "IPU_TUTORIALS_INSTANCE_TIMEOUT"
DEFAULT_TIMEOUT = 120.0  # seconds: generous for a loaded laptop, yet bounded
_KEY = "ipu_tutorials/instance/"
_STORE_HOSTED = "IPU_TUTORIALS_STORE_HOSTED"  # poprun hosts the store (see poprun.py)
# Instances on one host started by hand (MASTER_ADDR on loopback) without a secret: the store
# listens on loopback only and its values are signed with this known key, which proves nothing
# (docs/security.md); they are still JSON, never pickle.
_LOCAL_SECRET = "ipu-tutorials-loopback-run"


class InstanceError(Error):
    """Another instance of a multi-instance run failed, never joined, or disagrees."""


class _Group:
    """This process's place in the run: its index, and every instance's host and pid."""

    def __init__(self, index: int, count: int, peers: list[tuple[str, int]]):
        self.index, self.count, self.peers = index, count, peers
        self.updates = 0


_group: _Group | None = None
_stores: list = []  # the run's store, alive for the process's lifetime


def timeout_seconds() -> float:
    text = os.environ.get(TIMEOUT_ENV, str(DEFAULT_TIMEOUT))
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value <= 0:
        raise ValueError(f"{TIMEOUT_ENV} must be a positive number of seconds, got {text!r}")
    return value


def join(index: int, count: int) -> _Group:
    """Join the run as instance `index` of `count` (once per process); return the group.

    Raises:
        InstanceError: another instance did not join in time, or torch.distributed was set
            up for a different rank or world size.
    """
    global _group
    if _group is not None:
        if (_group.index, _group.count) != (index, count):
            raise InstanceError(f"this process already joined as instance {_group.index} of "
                                f"{_group.count}; it cannot also be instance {index} of {count}")
        return _group
    me = (socket.gethostname(), os.getpid())
    if dist.is_initialized():  # the program set up torch.distributed itself: use its group
        if (dist.get_rank(), dist.get_world_size()) != (index, count):
            raise InstanceError(f"torch.distributed is initialised as rank {dist.get_rank()} "
                                f"of {dist.get_world_size()}, but the options say instance "
                                f"{index} of {count}: make opts.Distributed.configureProcessId "
                                f"match")
        peers = all_gather_json(list(me))  # JSON, never pickle
    else:
        peers = _meet(index, count, me)
    _group = _Group(index, count, [tuple(peer) for peer in peers])
    return _group


def _meet(index: int, count: int, me: tuple[str, int]) -> list[tuple[str, int]]:
    """Register in the run's store, wait (bounded) for every instance, then form the group."""
    timeout = timeout_seconds()
    store = _connect_store(index, count, timeout)
    store.set(f"{_KEY}joined/{index}", json.dumps({"host": me[0], "pid": me[1]}))
    _wait_for_all(store, count, timeout)
    peers = []
    for i in range(count):
        try:  # a value without this run's secret is refused before anything else happens
            record = json.loads(store.get(f"{_KEY}joined/{i}"))
        except rendezvous.ForgedValue:
            raise InstanceError(f"instance {index}: refused instance {i}: its record is not "
                                f"signed with this run's secret (a process without the secret "
                                f"tried to join, or the hosts were given different "
                                f"{rendezvous.SECRET_ENV} values)") from None
        peers.append((str(record.get("host")), int(record.get("pid", 0))))
    try:
        dist.init_process_group("gloo", store=dist.PrefixStore(_KEY + "pg", store), rank=index,
                                world_size=count, timeout=datetime.timedelta(seconds=timeout))
    except RuntimeError as error:  # gloo's records are signed too (a ForgedValue, or its text)
        if "not signed with this run's secret" not in str(error):
            raise
        raise InstanceError(f"instance {index}: {str(error).splitlines()[0]}") from None
    return peers


def _connect_store(index: int, count: int, timeout: float) -> rendezvous.SignedStore:
    """The run's store, signed with its secret: poprun's private FileStore on one host, else
    the launcher's TCPStore (poprun's or torchrun's), or one instance 0 hosts."""
    path = os.environ.get(rendezvous.STORE_FILE_ENV)
    host, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
    if path is None and (host is None or port is None):
        raise InstanceError(f"instance {index} of {count} needs to know where the others meet: "
                            f"launch with poprun (or torchrun), or set MASTER_ADDR and "
                            f"MASTER_PORT in every instance's environment")
    try:
        secret = (rendezvous.secret_from_environment(required=path is None
                                                     and not _is_loopback(host))
                  or _LOCAL_SECRET)
        if path is not None:
            store = rendezvous.file_store(path, count, timeout)
        else:
            store = _tcp_store(index, count, host, int(port), timeout)
    except rendezvous.RendezvousError as error:
        raise InstanceError(f"instance {index}: {error}") from None
    except (RuntimeError, OSError) as error:
        where = path if path is not None else f"{host}:{port}"
        raise InstanceError(f"instance {index} could not reach the run's store at {where} "
                            f"within {timeout:.0f} s ({error}); is instance 0 running?") from error
    signed = rendezvous.SignedStore(store, secret)
    _stores.append(signed)  # gloo keeps using it: keep it (and its Python half) alive
    return signed


def _tcp_store(index: int, count: int, host: str, port: int, timeout: float):
    hosted = (os.environ.get("TORCHELASTIC_USE_AGENT_STORE", "").lower() == "true"
              or os.environ.get(_STORE_HOSTED) == "1")  # by poprun or torchrun's agent
    listener = rendezvous.bind(host, port) if index == 0 and not hosted else None
    return rendezvous.tcp_store(host, port, count, listener, timeout)


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(socket.gethostbyname(host)).is_loopback
    except (OSError, ValueError):
        return False


def _wait_for_all(store, count: int, timeout: float) -> None:
    keys = [f"{_KEY}joined/{i}" for i in range(count)]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        missing = [i for i, key in enumerate(keys) if not store.check([key])]
        if not missing:
            return
        time.sleep(0.05)
    raise InstanceError(f"instance(s) {_names(missing)} of {count} never joined the run within "
                        f"{timeout:.0f} s ({TIMEOUT_ENV}); check that every instance was "
                        f"started and reaches its first compile")


def _names(indices: list[int]) -> str:
    return ", ".join(str(i) for i in indices)


def agree(group: _Group, fingerprint: dict) -> None:
    """Check at compile that every instance compiled the same configuration.

    Raises:
        InstanceError: naming each setting that differs and the values per instance.
    """
    everyone: list = []
    _collective(group, "compile", lambda: everyone.extend(all_gather_json(fingerprint)))
    mine = everyone[group.index]  # as JSON made it (tuples become lists), like the others'
    differing = [key for key in mine if any(f.get(key) != mine[key] for f in everyone)]
    if differing:
        lines = "; ".join(f"{key}: " + ", ".join(f"instance {i} has {f.get(key)!r}"
                                                  for i, f in enumerate(everyone))
                          for key in differing)
        raise InstanceError(f"the instances compiled different configurations ({lines}). Every "
                            f"instance must run the same program with the same options: under "
                            f"poprun use popdist.poptorch.Options(), and set the same options "
                            f"and batch size everywhere")


def broadcast_weights(group: _Group, module: torch.nn.Module) -> None:
    """Give every instance instance 0's weights and buffers, so the replicas start equal."""
    tensors = [t for t in list(module.parameters()) + list(module.buffers())
               if t.is_floating_point()]
    if not tensors:
        return
    with torch.no_grad():
        for dtype in {t.dtype for t in tensors}:
            same = [t for t in tensors if t.dtype == dtype]
            flat = torch.cat([t.detach().reshape(-1) for t in same])
            with held_until_released([flat]):
                _collective(group, "compile", lambda: dist.broadcast(flat, src=0))
            _unflatten_into(flat, same)


def _unflatten_into(flat: torch.Tensor, tensors: list[torch.Tensor]) -> None:
    start = 0
    for t in tensors:
        t.copy_(flat[start:start + t.numel()].view_as(t))
        start += t.numel()


def gradient_reducer(group: _Group):
    """The hook the runtime calls before each weight update: sum gradients over instances.

    It gets (grads, count, running): the local replicas' gradients, the micro-batches they
    hold, and whether they are already a running mean. It returns the Pod-wide ones.
    """

    def reduce(grads: dict, count: int, running: bool) -> tuple[dict, int]:
        group.updates += 1
        params = list(grads)
        with torch.no_grad():
            for dtype in {grads[p].dtype for p in params}:
                same = [p for p in params if grads[p].dtype == dtype]
                flat = torch.cat([grads[p].reshape(-1) for p in same])
                with held_until_released([flat]):
                    _collective(group, f"gradient all-reduce of weight update {group.updates}",
                                lambda: dist.all_reduce(flat))
                if running:  # a mean of equal-sized means
                    flat /= group.count
                _unflatten_into(flat, [grads[p] for p in same])
        return grads, count if running else count * group.count

    return reduce


def _collective(group: _Group, what: str, call) -> None:
    """Run a collective; if it fails, say which instance is to blame."""
    try:
        call()
    except Exception as error:  # gloo raises RuntimeError subclasses of several kinds
        raise InstanceError(f"instance {group.index}: the {what} across {group.count} "
                            f"instances failed: {lost_instances(group)}. ({error})") from error


def lost_instances(group: _Group, wait: float = 3.0) -> str:
    """Name the instances that exited (same host: their pid is gone); else the silent ones."""
    deadline = time.monotonic() + wait
    while True:
        gone = [i for i, peer in enumerate(group.peers) if i != group.index and _exited(peer)]
        if gone or time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    if gone:
        return (f"instance(s) {_names(gone)} exited "
                f"({', '.join(f'pid {group.peers[i][1]} on {group.peers[i][0]}' for i in gone)})")
    others = [i for i in range(group.count) if i != group.index]
    return (f"instance(s) {_names(others)} did not answer within {timeout_seconds():.0f} s "
            f"({TIMEOUT_ENV}); one of them stopped, hangs, or runs a different program")


def _exited(peer: tuple[str, int]) -> bool:
    host, pid = peer
    if host != socket.gethostname():
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")  # a zombie has exited
    except FileNotFoundError:
        return True
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False


def stop_on_sigterm() -> None:
    """Under poprun, the launcher stops the other instances with SIGTERM when one fails: turn
    that into an InstanceError naming the failed instance instead of a silent death."""
    if threading.current_thread() is not threading.main_thread():
        return

    def on_sigterm(signum, frame):
        group = _group
        if group is None:
            raise InstanceError("stopped by the launcher (SIGTERM) before joining the run: "
                                "another instance failed to start")
        raise InstanceError(f"instance {group.index}: stopped by the launcher because "
                            f"{lost_instances(group)}")

    signal.signal(signal.SIGTERM, on_sigterm)


def fingerprint(spec, model: torch.nn.Module, optimizer) -> dict:
    """What every instance of one run must agree on (compared at compile), from its RunSpec."""
    return {
        "model": "training" if spec.training else "inference",
        "replicationFactor (local replicas)": spec.replication_factor,
        "deviceIterations": spec.device_iterations,
        "gradientAccumulation": spec.gradient_accumulation,
        "micro-batch size": spec.micro_batch,
        "reduction": "ReductionType.Mean" if spec.mean_reduction else "ReductionType.Sum",
        "execution strategy": spec.strategy.text,
        "optimizer": type(optimizer).__name__ if spec.training else None,
        "parameters": [(name, tuple(p.shape)) for name, p in model.named_parameters()],
    }


def prepare(spec, model: torch.nn.Module, optimizer):
    """At compile: join the other instances, check agreement, share instance 0's weights.

    Args:
        spec: the compiled model's RunSpec (its instances and this process's index among them).

    Returns:
        The runtime's gradient hook for a multi-instance training model, else None.
    """
    if spec.instances == 1:
        return None
    group = join(spec.instance, spec.instances)
    agree(group, fingerprint(spec, model, optimizer))
    broadcast_weights(group, model)
    return gradient_reducer(group) if spec.training else None
