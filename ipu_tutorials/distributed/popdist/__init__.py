"""popdist on the simulator: `import popdist` becomes `from ipu_tutorials import popdist`.

Under poprun each instance reads here how many instances and replicas the run has and which
of them are its own. Outside poprun every function answers for a single instance that drives
every replica, so the same program runs unchanged both ways.
"""
from __future__ import annotations

import os

from .. import _launch
from ...poptorch import _instances

ENV_TOTAL_REPLICAS = "POPDIST_NUM_TOTAL_REPLICAS"
ENV_IPUS_PER_REPLICA = "POPDIST_NUM_IPUS_PER_REPLICA"
ENV_INSTANCES = "POPDIST_NUM_INSTANCES"
ENV_UNDER_POPRUN = "IPU_TUTORIALS_POPRUN"

__all__ = ["isPopdistEnvSet", "getNumInstances", "getInstanceIndex", "getNumTotalReplicas",
           "getNumLocalReplicas", "getReplicaIndexOffset", "getNumIpusPerReplica",
           "getDeviceId", "init", "InstanceError"]

InstanceError = _instances.InstanceError

if os.environ.get(ENV_UNDER_POPRUN):  # where the kernel cannot end us with poprun, watch it
    _launch.watch_launcher()


def _int_env(name: str, default: int) -> int:
    text = os.environ.get(name)
    if text is None:
        return default
    if not text.isdigit() or int(text) < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {text!r}; it is set by "
                         f"poprun, so launch with poprun rather than setting it by hand")
    return int(text)


def isPopdistEnvSet() -> bool:
    """True inside an instance launched by poprun."""
    return all(name in os.environ for name in (ENV_TOTAL_REPLICAS, ENV_INSTANCES, "RANK"))


def getNumInstances() -> int:
    """Instances (host processes) in the run; 1 outside poprun."""
    return _int_env(ENV_INSTANCES, 1) if isPopdistEnvSet() else 1


def getInstanceIndex() -> int:
    """This instance's index, 0 .. getNumInstances() - 1; 0 outside poprun."""
    return _int_env("RANK", 0) if isPopdistEnvSet() else 0


def getNumTotalReplicas() -> int:
    """Replicas of the whole run, over every instance; 1 outside poprun."""
    return _int_env(ENV_TOTAL_REPLICAS, 1) if isPopdistEnvSet() else 1


def getNumLocalReplicas() -> int:
    """Replicas this instance drives (poprun splits them evenly)."""
    return getNumTotalReplicas() // getNumInstances()


def getReplicaIndexOffset() -> int:
    """The global index of this instance's first replica."""
    return getInstanceIndex() * getNumLocalReplicas()


def getNumIpusPerReplica() -> int:
    """IPUs per replica, as given to poprun --ipus-per-replica; 1 outside poprun."""
    return _int_env(ENV_IPUS_PER_REPLICA, 1) if isPopdistEnvSet() else 1


def getDeviceId() -> int:
    """(Simulated) the index of the first IPU of the Pod that this instance drives.

    Real popdist returns the id of the multi-IPU device poprun reserved for the instance; the
    simulator numbers IPUs instance after instance instead.
    """
    return getReplicaIndexOffset() * getNumIpusPerReplica()


def init() -> None:
    """Join the other instances now (compiling a model also does it on first use).

    Sets up torch.distributed's gloo process group for this instance and, under poprun,
    turns the launcher's SIGTERM (sent when another instance failed) into an InstanceError
    naming that instance.

    Raises:
        InstanceError: another instance did not join within the timeout.
    """
    if not isPopdistEnvSet():
        return
    if os.environ.get(ENV_UNDER_POPRUN):
        _instances.stop_on_sigterm()
    _instances.join(getInstanceIndex(), getNumInstances())
