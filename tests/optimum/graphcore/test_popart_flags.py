"""optimum-graphcore's PopART flags, recorded in the options, and the simulated IPU's number."""
from ipu_tutorials import poptorch, set_system
from ipu_tutorials.optimum.graphcore._popart_flags import set_popart_flags, simulated_ipu_version


def test_the_flags_optimum_sets_are_recorded_and_explicit_ir_only_when_asked():
    opts = poptorch.Options()
    set_popart_flags(opts, explicit_ir=False)
    recorded = opts._Popart.toDict()
    assert recorded["disableGradAccumulationTensorStreams"] is True
    assert recorded["accumulateOuterFragmentSettings.excludedVirtualGraphs"] == ["0"]
    assert recorded["patterns"]["TiedGather"] is True
    assert "enableExplicitIR" not in recorded
    set_popart_flags(opts, explicit_ir=True)
    assert opts._Popart.toDict()["enableExplicitIR"] is True


def test_the_ipu_number_follows_the_simulated_system():  # the seed fixture resets it
    assert simulated_ipu_version() == 2
    set_system("ipu21", 4)
    assert simulated_ipu_version() == 21
