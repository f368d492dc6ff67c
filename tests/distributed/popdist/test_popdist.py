"""popdist's functions, in and out of a poprun environment."""
import pytest

from ipu_tutorials.distributed import popdist


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


def test_a_hand_set_variable_is_refused_with_the_fix(instance_1_of_2, monkeypatch):
    monkeypatch.setenv("POPDIST_NUM_INSTANCES", "two")
    with pytest.raises(ValueError, match="POPDIST_NUM_INSTANCES must be a non-negative integer, "
                                         "got 'two'; it is set by poprun"):
        popdist.getNumInstances()
