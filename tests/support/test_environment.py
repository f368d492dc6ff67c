"""Environment variables: read in one place, when the user acts."""
import pytest

from ipu_tutorials import poptorch
from ipu_tutorials.support import environment
from ipu_tutorials.simulator.hardware import BOW, default_system

VARIABLES = ("POPTORCH_IPU_MODEL", "POPTORCH_CACHE_DIR", "POPTORCH_DEFAULT_OPTIONS",
             "POPTORCH_LOG_LEVEL", "POPTORCH_WAIT_FOR_IPU", "POPTORCH_IPU_MODEL_VERSION",
             "IPU_TUTORIALS_NUM_IPUS", "POPLAR_ENGINE_OPTIONS", "OMPI_COMM_WORLD_RANK",
             "OMPI_COMM_WORLD_SIZE")


@pytest.fixture(autouse=True)
def clean(monkeypatch):
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_unset_variables_take_the_defaults():
    assert environment.read() == environment.Environment()


def test_each_variable_is_read(monkeypatch):
    monkeypatch.setenv("POPTORCH_WAIT_FOR_IPU", "1")
    monkeypatch.setenv("IPU_TUTORIALS_NUM_IPUS", "64")
    monkeypatch.setenv("POPTORCH_IPU_MODEL_VERSION", "ipu21")
    env = environment.read()
    assert env.wait_for_ipu and env.num_ipus == "64" and env.ipu_version == "ipu21"
    assert default_system().ipu is BOW and default_system().num_ipus == 64


def test_options_take_their_starting_values_when_created(monkeypatch):
    before = poptorch.Options()
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "1")
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "2")
    after = poptorch.Options()
    assert before.Distributed.processId == 0 and after.Distributed.processId == 1


def test_a_bad_ipu_count_names_the_variable(monkeypatch):
    monkeypatch.setenv("IPU_TUTORIALS_NUM_IPUS", "many")
    with pytest.raises(ValueError, match="IPU_TUTORIALS_NUM_IPUS must be a positive integer"):
        default_system()
