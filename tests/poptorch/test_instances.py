"""_instances.py: what instances must agree on, how long they wait, who is blamed when one is lost."""
import dataclasses
import socket
import subprocess
import sys

import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.poptorch import _instances, _to_simulator

HOST = socket.gethostname()


def test_the_timeout_is_a_positive_number_of_seconds(monkeypatch):
    monkeypatch.delenv(_instances.TIMEOUT_ENV, raising=False)
    assert _instances.timeout_seconds() == 120.0
    monkeypatch.setenv(_instances.TIMEOUT_ENV, "7.5")
    assert _instances.timeout_seconds() == 7.5
    for bad in ("0", "-3", "soon"):
        monkeypatch.setenv(_instances.TIMEOUT_ENV, bad)
        with pytest.raises(ValueError, match=f"IPU_TUTORIALS_INSTANCE_TIMEOUT must be a positive "
                                             f"number of seconds, got '{bad}'"):
            _instances.timeout_seconds()


def spec(opts, training=True, micro_batch=8):
    return dataclasses.replace(_to_simulator.declared_spec(opts, training), micro_batch=micro_batch)


def test_the_fingerprint_holds_what_every_instance_must_share():
    opts = poptorch.Options().replicationFactor(2).deviceIterations(3)
    opts.Training.accumulationAndReplicationReductionType(poptorch.ReductionType.Sum)
    model = torch.nn.Linear(4, 2)
    found = _instances.fingerprint(spec(opts), model, poptorch.optim.SGD(model.parameters(), lr=0.1))
    assert (found["model"], found["replicationFactor (local replicas)"], found["deviceIterations"],
            found["micro-batch size"], found["optimizer"]) == ("training", 2, 3, 8, "SGD")
    assert found["reduction"] == "ReductionType.Sum"
    assert found["parameters"] == [("weight", (2, 4)), ("bias", (2,))]
    assert _instances.fingerprint(spec(opts, training=False), model, None)["optimizer"] is None


def test_a_single_instance_joins_nobody():
    assert _instances.prepare(spec(poptorch.Options(), micro_batch=1), torch.nn.Linear(2, 2),
                              None) is None


def test_an_instance_whose_process_is_gone_is_named_with_its_pid():
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()  # reaped: its pid is gone
    group = _instances._Group(0, 2, [(HOST, 1), (HOST, ended.pid)])
    assert (_instances.lost_instances(group, wait=0) ==
            f"instance(s) 1 exited (pid {ended.pid} on {HOST})")


def test_instances_elsewhere_that_stop_answering_are_named_with_the_timeout(monkeypatch):
    monkeypatch.setenv(_instances.TIMEOUT_ENV, "30")
    group = _instances._Group(1, 3, [("other-host", 10), (HOST, 1), ("other-host", 11)])
    assert _instances.lost_instances(group, wait=0) == (
        "instance(s) 0, 2 did not answer within 30 s (IPU_TUTORIALS_INSTANCE_TIMEOUT); one of "
        "them stopped, hangs, or runs a different program")
