"""popdist's functions and popdist.poptorch.Options, in and out of a poprun environment."""
import pytest

from ipu_tutorials import popdist, poptorch
import ipu_tutorials.popdist.poptorch as popdist_poptorch


@pytest.fixture
def instance_1_of_2(monkeypatch):
    """The environment poprun --num-instances 2 --num-replicas 8 --ipus-per-replica 4 gives
    its second instance."""
    for name, value in {"POPDIST_NUM_TOTAL_REPLICAS": "8", "POPDIST_NUM_INSTANCES": "2",
                        "POPDIST_NUM_IPUS_PER_REPLICA": "4", "RANK": "1"}.items():
        monkeypatch.setenv(name, value)


def test_outside_poprun_one_instance_drives_everything(monkeypatch):
    monkeypatch.delenv("POPDIST_NUM_TOTAL_REPLICAS", raising=False)
    assert not popdist.isPopdistEnvSet()
    assert (popdist.getNumInstances(), popdist.getInstanceIndex(), popdist.getNumTotalReplicas(),
            popdist.getNumLocalReplicas(), popdist.getReplicaIndexOffset(),
            popdist.getNumIpusPerReplica(), popdist.getDeviceId()) == (1, 0, 1, 1, 0, 1, 0)
    popdist.init()  # nothing to join


def test_an_instance_reads_its_share(instance_1_of_2):
    assert popdist.isPopdistEnvSet()
    assert popdist.getNumInstances() == 2 and popdist.getInstanceIndex() == 1
    assert popdist.getNumTotalReplicas() == 8 and popdist.getNumLocalReplicas() == 4
    assert popdist.getReplicaIndexOffset() == 4
    assert popdist.getNumIpusPerReplica() == 4
    assert popdist.getDeviceId() == 16  # IPUs 16..31 of the Pod


def test_options_carry_the_local_replicas_and_process_id(instance_1_of_2):
    opts = popdist_poptorch.Options()
    assert isinstance(opts, poptorch.Options)
    assert opts.replication_factor == 4
    assert (opts.Distributed.processId, opts.Distributed.numProcesses) == (1, 2)


def test_a_hand_set_variable_is_refused_with_the_fix(instance_1_of_2, monkeypatch):
    monkeypatch.setenv("POPDIST_NUM_INSTANCES", "two")
    with pytest.raises(ValueError, match="POPDIST_NUM_INSTANCES must be a non-negative integer, "
                                         "got 'two'; it is set by poprun"):
        popdist.getNumInstances()


def test_options_warn_when_poprun_was_given_other_ipus_per_replica(instance_1_of_2):
    with pytest.warns(UserWarning, match="uses 2 IPU\\(s\\) per replica but poprun was given "
                                         "--ipus-per-replica 4"):
        popdist_poptorch.Options(ipus_per_replica=2)
