"""The run spec: frozen, named as the user names the counts, and the batch arithmetic."""
import dataclasses

import pytest

from ipu_tutorials.simulator.spec import RunSpec, StrategyKind


def test_the_spec_is_frozen():
    spec = RunSpec(training=True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.gradient_accumulation = 4


def test_a_call_holds_d_a_g_micro_batches_and_r_a_d_mb_samples():
    spec = RunSpec(training=True, micro_batch=3, device_iterations=2, gradient_accumulation=5,
                   replication_factor=4, input_group_size=2)
    assert spec.input_groups == 2
    assert spec.micro_batches_per_input == 2 * 5 * 2
    assert spec.samples_per_call == 3 * 2 * 5 * 4
    assert spec.describe_factor() == ("deviceIterations (2) x gradientAccumulation (5) x "
                                      "replicationFactor (4) / input group size 2 = 20")


@pytest.mark.parametrize("orthogonal, groups", [(False, [0, 0, 1, 1]), (True, [0, 1, 0, 1])])
def test_replicas_read_their_input_group(orthogonal, groups):
    spec = RunSpec(training=False, replication_factor=4, input_group_size=2,
                   orthogonal_groups=orthogonal)
    assert [spec.group_of(r) for r in range(4)] == groups


def test_strategy_kinds_print_and_compare_as_their_names():
    assert f"{StrategyKind.PIPELINED}" == "pipelined" and str(StrategyKind.SHARDED) == "sharded"
    assert StrategyKind.PARALLEL_PHASED == "parallel_phased"
    assert [k.phased for k in StrategyKind] == [False, False, True, True]
