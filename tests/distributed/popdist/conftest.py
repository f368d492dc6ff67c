"""The environment poprun gives an instance, for the popdist tests."""
import pytest


@pytest.fixture
def instance_1_of_2(monkeypatch):
    """The environment poprun --num-instances 2 --num-replicas 8 --ipus-per-replica 4 gives
    its second instance."""
    for name, value in {"POPDIST_NUM_TOTAL_REPLICAS": "8", "POPDIST_NUM_INSTANCES": "2",
                        "POPDIST_NUM_IPUS_PER_REPLICA": "4", "RANK": "1"}.items():
        monkeypatch.setenv(name, value)
