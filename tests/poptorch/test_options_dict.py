"""_options_dict.py: Options as PopTorch's flat toDict() layout, and from_flat() back."""
import json

import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.poptorch._options_dict import from_flat
from ipu_tutorials.poptorch._options_dict import strategy_entries


def test_to_dict_has_poptorchs_flat_layout_with_enum_values():
    opts = poptorch.Options().outputMode(poptorch.OutputMode.Sum).enableExecutableCaching("/tmp/c")
    opts.Training.gradientAccumulation(4)
    opts.TensorLocations.setOptimizerLocation(poptorch.TensorLocationSettings().useOnChipStorage(False))
    opts.Precision.setPartialsType(torch.half)
    data = opts.toDict()
    json.dumps(data)  # plain values only
    assert data["output_mode"] == poptorch.OutputMode.Sum.value == 3  # PopTorch's enums.py
    assert data["execution_mode"] == 0  # PipelinedExecution's backendOptions()
    assert data["gradient_accumulation"] == 4
    assert data["accumulation_and_replication_reduction_type"] == poptorch.ReductionType.Mean.value
    assert data["location_optimizer"] == {"onChip": 0}
    assert (data["cachePath"], data["enableEngineCaching"]) == ("/tmp/c", True)
    assert "partials_type" not in data and "Precision" not in data  # PopTorch leaves Precision out
    sharded = poptorch.Options().setExecutionStrategy(poptorch.ShardedExecution())
    assert sharded.toDict()["execution_mode"] == 1


def test_to_dict_round_trips_through_from_dict():
    opts = poptorch.Options().deviceIterations(3).replicationFactor(2).randomSeed(7)
    opts.outputMode(poptorch.OutputMode.EveryN, 2).enableExecutableCaching("/tmp/c")
    opts._Popart.set("defaultPrefetchBufferingDepth", 3)
    opts.Training.gradientAccumulation(5)
    opts.setExecutionStrategy(poptorch.ShardedExecution())
    rebuilt = from_flat(poptorch.Options, opts.toDict())
    assert rebuilt.toDict() == opts.toDict()
    assert rebuilt.output_mode == poptorch.OutputMode.EveryN
    assert rebuilt._value("executable_cache_dir") == "/tmp/c"
    assert isinstance(rebuilt._execution_strategy, poptorch.ShardedExecution)


def test_from_dict_refuses_what_it_cannot_rebuild():
    with pytest.raises(ValueError, match="phased execution"):
        from_flat(poptorch.Options, {"execution_mode": 2})
    with pytest.raises(TypeError, match="expects a dict"):
        from_flat(poptorch.Options, "nope")


def test_phased_strategies_are_mode_2_with_their_liveness_and_kind():
    serial = poptorch.SerialPhasedExecution("a", "b").setTensorsLiveness(
        poptorch.Liveness.OffChipAfterEachPhase)
    assert strategy_entries(serial) == {"execution_mode": 2, "separate_backward_phase": False,
                                        "tensors_liveness": 3, "serial_phases_execution": True}
    parallel = poptorch.ParallelPhasedExecution("a", "b").sendTensorsOffChipAfterFwd()
    parallel.useSeparateBackwardPhase()
    assert strategy_entries(parallel) == {"execution_mode": 2, "separate_backward_phase": True,
                                          "tensors_liveness": 1, "serial_phases_execution": False}
