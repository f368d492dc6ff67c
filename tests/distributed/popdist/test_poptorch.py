"""popdist.poptorch.Options: poptorch.Options set for this instance's share of the run."""
import pytest

from ipu_tutorials import poptorch
import ipu_tutorials.distributed.popdist.poptorch as popdist_poptorch


def test_options_carry_the_local_replicas_and_process_id(instance_1_of_2):
    opts = popdist_poptorch.Options()
    assert isinstance(opts, poptorch.Options)
    assert opts.replication_factor == 4
    assert (opts.Distributed.processId, opts.Distributed.numProcesses) == (1, 2)


def test_outside_poprun_the_options_drive_one_replica_in_one_process(monkeypatch):
    monkeypatch.delenv("POPDIST_NUM_TOTAL_REPLICAS", raising=False)
    opts = popdist_poptorch.Options(ipus_per_replica=2)  # no poprun: nothing to compare with
    assert opts.replication_factor == 1
    assert (opts.Distributed.processId, opts.Distributed.numProcesses) == (0, 1)


def test_options_warn_when_poprun_was_given_other_ipus_per_replica(instance_1_of_2):
    with pytest.warns(UserWarning, match="uses 2 IPU\\(s\\) per replica but poprun was given "
                                         "--ipus-per-replica 4"):
        popdist_poptorch.Options(ipus_per_replica=2)


def test_the_setters_popdist_owns_are_refused_with_poptorchs_wording(instance_1_of_2):
    opts = popdist_poptorch.Options()
    refused = {"useIpuId": lambda: opts.useIpuId(0),
               "replicationFactor": lambda: opts.replicationFactor(2),
               "Distributed.disable": opts.Distributed.disable,
               "Distributed.setEnvVarNames": lambda: opts.Distributed.setEnvVarNames("N", "I"),
               "Distributed.configureProcessId": lambda: opts.Distributed.configureProcessId(1)}
    for setter, call in refused.items():
        with pytest.raises(RuntimeError, match=rf"^Cannot call `{setter}` with "
                                               rf"popdist\.poptorch\.Options: poprun's"):
            call()
    assert opts.replication_factor == 4
    assert (opts.Distributed.processId, opts.Distributed.numProcesses) == (1, 2)
    clone = opts.clone()
    with pytest.raises(RuntimeError, match="Cannot call `replicationFactor`"):
        clone.replicationFactor(1)
    with pytest.raises(RuntimeError, match="Cannot call `Distributed.configureProcessId`"):
        clone.Distributed.configureProcessId(0, 2)
