"""The PopART session option names opts._Popart.set() accepts (recorded, not simulated).

PopTorch passes these to PopART, which rejects an unknown name when the model compiles
(poptorch tests/options_test.py, test_invalid_options: "Unknown ... option"). The simulator has
no PopART, so it checks the name when it is set, against this table: the options of PopART's
SessionOptions (popart/sessionoptions.hpp, Poplar SDK 3.x) that Graphcore's examples,
optimum-graphcore and PopTorch itself set. A name missing here is a one-line addition.
"""
from __future__ import annotations

POPART_OPTION_NAMES = frozenset({
    "accumulateOuterFragmentSettings.excludedVirtualGraphs",
    "accumulateOuterFragmentSettings.schedule",
    "accumulationAndReplicationReductionType",
    "autoRecomputation",
    "automaticLossScalingSettings.enabled",
    "batchSerializationSettings.batchSchedule",
    "batchSerializationSettings.concatOnExecutionPhaseChange",
    "batchSerializationSettings.concatOnPipelineStageChange",
    "batchSerializationSettings.concatOnVirtualGraphChange",
    "batchSerializationSettings.factor",
    "batchSerializationSettings.method",
    "batchSerializationSettings.transformContext",
    "cachePath",
    "constantWeights",
    "convolutionOptions",
    "customCodelets",
    "decomposeGradSum",
    "defaultBufferingDepth",
    "defaultPrefetchBufferingDepth",
    "delayVarUpdates",
    "disableGradAccumulationTensorStreams",
    "disableOptimizerStateTensorStreams",
    "dotChecks",
    "enableEngineCaching",
    "enableExplicitIR",
    "enableFloatingPointChecks",
    "enableGradientAccumulation",
    "enableOutlining",
    "enablePipelining",
    "enableReplicatedGraphs",
    "enableStableNorm",
    "enableStochasticRounding",
    "engineOptions",
    "explicitRecomputation",
    "gclOptions",
    "groupNormStridedChannelGrouping",
    "hardwareInstrumentations",
    "instrumentWithHardwareCycleCounter",
    "logDir",
    "lstmOptions",
    "matmulOptions",
    "outlineThreshold",
    "partialsTypeMatMuls",
    "patterns",  # setPatterns() stores the pattern dict and its level under these two names
    "patternsLevel",
    "replicatedCollectivesSettings.mergeAllReduceCollectives",
    "replicatedCollectivesSettings.prepareScheduleForMergingCollectives",
    "reportOptions",
    "saveInitializersToFile",
    "scheduleNonWeightUpdateGradientConsumersEarly",
    "subgraphCopyingStrategy",
    "syntheticDataMode",
    "timeLimitScheduler",
    "updatableNamedBuffers",
    "virtualGraphMode",
})


def _recomputes(recomputation_type) -> int | None:
    """PopART's RecomputationType (0 None, 1 Standard, 2 NormOnly, 3 Pipeline, 4 RecomputeAll),
    None when unset. PopTorch sets Pipeline only when it is unset (popart_compiler
    Compiler.cpp, setOptionIfNotSet), so an explicit 0 turns it off."""
    return None if recomputation_type is None else int(recomputation_type)


# The PopART options the simulator reads: name -> (the RunSpec field it fills, how).
POPART_SPEC_FIELDS = {"autoRecomputation": ("recompute", _recomputes)}
