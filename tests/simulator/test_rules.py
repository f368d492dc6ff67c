"""The pipeline rules: each has one function, and every consumer agrees with it."""
import dataclasses

import pytest

from ipu_tutorials import poptorch
from ipu_tutorials.errors import Error
from ipu_tutorials.classroom.explorers.pipeline import simulate_pipeline
from ipu_tutorials.simulator import rules
from ipu_tutorials.simulator.schedule import pipeline_cycles
from ipu_tutorials.simulator.spec import RunSpec, StrategySpec, StrategyKind

PIPELINED = RunSpec(training=True, strategy=StrategySpec(StrategyKind.PIPELINED))
SHARDED = RunSpec(training=True, strategy=StrategySpec(StrategyKind.SHARDED))


def test_pipeline_depth_is_2n_minus_1_training_and_n_inference():
    assert [rules.pipeline_depth(n, True) for n in (1, 2, 4)] == [1, 3, 7]
    assert [rules.pipeline_depth(n, False) for n in (1, 2, 4)] == [1, 2, 4]
    assert rules.fill_cycles(4, True) == 6


def test_minimum_counts():
    assert [rules.min_gradient_accumulation(n) for n in (1, 2, 4)] == [1, 3, 7]
    assert rules.min_device_iterations(3) == 3


def test_stash_depth_is_2_n_minus_1_minus_s_plus_1_and_only_when_pipelining():
    assert [rules.stash_depth(PIPELINED, s, 4) for s in range(4)] == [7, 5, 3, 1]
    assert rules.stash_depth(SHARDED, 0, 4) == 0
    assert rules.stash_depth(PIPELINED, 0, 1) == 0  # one stage: nothing to overlap


def test_recomputation_happens_exactly_when_training_pipelines():
    inference = RunSpec(training=False, strategy=StrategySpec(StrategyKind.PIPELINED))
    assert rules.recomputes(PIPELINED, 2)
    assert not any([rules.recomputes(PIPELINED, 1), rules.recomputes(SHARDED, 4),
                    rules.recomputes(inference, 4)])


def test_a_one_stage_pipeline_is_scheduled_sharded():
    assert rules.schedule_kind(PIPELINED, 1) == StrategyKind.SHARDED
    assert rules.schedule_kind(PIPELINED, 2) == StrategyKind.PIPELINED


@pytest.mark.parametrize("training, message", [
    (True, r"gradient accumulation must be at least 7; it is 6.*gradientAccumulation\(7\)"),
    (False, r"device iterations must be at least 4; it is 3.*deviceIterations\(4\)")])
def test_verify_counts_states_the_rule_and_the_fix(training, message):
    spec = RunSpec(training=training, gradient_accumulation=6 if training else 1,
                   device_iterations=3)
    with pytest.raises(poptorch.Error, match=message):
        rules.verify_counts(spec, 4)
    rules.verify_counts(spec, 1)  # one stage is not a pipeline


def test_the_schedule_costs_and_memory_plan_follow_the_rules():
    n, a = 4, 9
    assert len(pipeline_cycles(n, a, True)) == a + rules.fill_cycles(n, True)
    piped = simulate_pipeline(ipus=n, accumulation=a)
    sharded = simulate_pipeline(ipus=n, accumulation=a, strategy="sharded")
    # the middle stages receive the same activation, so their stashes differ by depth alone
    depths = [rules.stash_depth(piped.spec, s, n) for s in (1, 2)]
    assert piped.memory[1].stash / piped.memory[2].stash == pytest.approx(depths[0] / depths[1])
    assert all(m.stash == 0 for m in sharded.memory.ipus)
    for p, s in zip(piped.stage_costs, sharded.stage_costs):  # the recomputed forward
        assert p.backward == pytest.approx(s.backward + s.forward)


def test_autorecomputation_set_explicitly_decides_for_pipelines_too():
    """PopTorch sets Pipeline recomputation only when autoRecomputation is unset."""
    off = RunSpec(training=True, recompute=False, strategy=StrategySpec(StrategyKind.PIPELINED))
    on = RunSpec(training=True, recompute=True, strategy=StrategySpec(StrategyKind.SHARDED))
    assert not rules.recomputes(off, 4)
    assert rules.recomputes(on, 1)
    assert rules.stash_depth(on, 0, 1) == 1 and rules.stash_depth(off, 0, 4) == 7


def test_pipeline_recomputation_without_a_pipeline_is_poparts_error():
    # was wrong: autoRecomputation 3 on one IPU recomputed, where PopART 3.4 refuses it
    # (willow/src/recompute.cpp)
    one_ipu = RunSpec(training=True, recompute=3, strategy=StrategySpec(StrategyKind.PIPELINED))
    with pytest.raises(Error, match=r"^Invalid RecomputationType::Pipeline in autoAnnotate when "
                                    r"using implicit pipelining\. .*autoRecomputation\", 1\)"):
        rules.verify_recomputation(one_ipu, 1)
    sharded = dataclasses.replace(one_ipu, strategy=StrategySpec(StrategyKind.SHARDED))
    with pytest.raises(Error, match="Invalid RecomputationType::Pipeline"):
        rules.verify_recomputation(sharded, 4)
    rules.verify_recomputation(one_ipu, 4)  # a pipeline over 4 IPUs takes it
    rules.verify_recomputation(dataclasses.replace(one_ipu, recompute=4), 1)  # RecomputeAll
