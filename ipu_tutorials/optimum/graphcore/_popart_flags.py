"""The options optimum-graphcore sets that the simulator only records: PopART flags, IPU target."""
from __future__ import annotations

from ... import poptorch
from ...simulator.hardware import VERSION_NUMBERS, default_system

# PopART enum values optimum-graphcore passes to opts._Popart.set (recorded, not simulated):
# AccumulateOuterFragmentSchedule.OverlapMemoryOptimized and SubgraphCopyingStrategy.JustInTime.
OVERLAP_MEMORY_OPTIMIZED = 3
JUST_IN_TIME = 1


def simulated_ipu_version() -> int:
    """PopTorch's number (2, 21 ...) for the simulated system's IPU, for useOfflineIpuTarget."""
    name = default_system().ipu.version
    return next(number for number, version in VERSION_NUMBERS.items() if version == name)


def set_popart_flags(opts: poptorch.Options, explicit_ir: bool) -> None:
    """optimum-graphcore's PopART performance settings: recorded in the options, not simulated."""
    opts._Popart.set("disableGradAccumulationTensorStreams", True)
    opts._Popart.set("accumulateOuterFragmentSettings.schedule", OVERLAP_MEMORY_OPTIMIZED)
    opts._Popart.set("accumulateOuterFragmentSettings.excludedVirtualGraphs", ["0"])
    opts._Popart.set("outlineThreshold", 10.0)
    opts._Popart.set("subgraphCopyingStrategy", JUST_IN_TIME)
    opts._Popart.set("scheduleNonWeightUpdateGradientConsumersEarly", True)
    opts._Popart.setPatterns({"TiedGather": True, "TiedGatherAccumulate": True,
                              "UpdateInplacePrioritiesForIpu": True})
    if explicit_ir:
        opts._Popart.set("enableExplicitIR", True)
    opts._Popart.set("engineOptions", {"opt.useAutoloader": "true",
                                       "target.syncReplicasIndependently": "true"})
