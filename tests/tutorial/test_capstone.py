"""The capstone recipe: the published BERT-Large run, its rules, and the same code trained small."""
import dataclasses

import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.errors import Error, OutOfMemoryError
from ipu_tutorials.tutorial import capstone
from ipu_tutorials.calibration.published_runs import bert_large_run

PUBLISHED = capstone.PUBLISHED


@pytest.fixture(scope="module")
def published_plan():
    return capstone.plan_pod16(PUBLISHED)


def test_layers_per_ipu_keeps_the_published_split_and_every_layer():
    assert capstone.layers_per_ipu(4) == (3, 7, 7, 7)
    assert capstone.layers_per_ipu(1) == (24,)
    assert capstone.layers_per_ipu(2) == (10, 14)
    for ipus in range(1, 17):
        split = capstone.layers_per_ipu(ipus)
        assert len(split) == ipus and sum(split) == 24
        assert list(split[1:]) == sorted(split[1:])  # later IPUs take the remainder


@pytest.mark.parametrize("ipus", [0, 26])
def test_layers_per_ipu_rejects_impossible_counts(ipus):
    with pytest.raises(ValueError, match=f"24 layers split over 1 to 25 IPUs, got {ipus}"):
        capstone.layers_per_ipu(ipus)


def test_options_say_what_the_config_says():
    opts = capstone.options(PUBLISHED)
    assert opts.replication_factor == 4
    assert opts.Training.gradient_accumulation == 2048
    assert opts.TensorLocations.location_optimizer == {"onChip": 0,
                                                       "useReplicatedTensorSharding": 1}
    assert opts.Precision._value("partials_type") == torch.float16
    assert opts.ipu_version == 21
    # set by useOfflineIpuTarget only (PopTorch's createOrSet): absent otherwise
    assert not hasattr(capstone.options(PUBLISHED, plan_only=False), "ipu_version")
    on_chip = capstone.options(dataclasses.replace(PUBLISHED, offload=False, half=False))
    assert on_chip.TensorLocations.location_optimizer["onChip"] == 1
    assert on_chip.Precision._value("partials_type") != torch.float16


def test_the_recipe_is_the_calibrated_bert_large_run(published_plan):
    calibrated = bert_large_run()
    assert capstone.sequences_per_second(published_plan) == pytest.approx(calibrated.simulated,
                                                                           rel=1e-9)
    assert published_plan.placement.ipus_acquired == 16
    assert published_plan.placement.ipus_per_replica == 4


def test_float32_does_not_fit():
    with pytest.raises(OutOfMemoryError, match="Out of memory: IPU 0 needs"):
        capstone.plan_pod16(dataclasses.replace(PUBLISHED, half=False))


def test_on_chip_lamb_does_not_fit():
    with pytest.raises(OutOfMemoryError, match="Out of memory: IPU 0 needs") as caught:
        capstone.plan_pod16(dataclasses.replace(PUBLISHED, offload=False))
    assert all(m.optimizer > 0 for m in caught.value.plan.ipus)


def test_more_than_sixteen_ipus_is_refused():
    with pytest.raises(Error, match="failed to acquire 32 IPUs"):
        capstone.plan_pod16(dataclasses.replace(PUBLISHED, replicas=8))


def test_too_little_accumulation_for_the_pipeline_is_refused():
    with pytest.raises(Error, match="gradient accumulation must be at least 9; it is 4"):
        capstone.plan_pod16(dataclasses.replace(PUBLISHED, accumulation=4))


def test_checkpoints_trade_live_activations_for_stash_not_time(published_plan):
    plan = capstone.plan_pod16(dataclasses.replace(PUBLISHED, recompute=False))
    with_checkpoints, without = published_plan.memory.ipus[1], plan.memory.ipus[1]
    assert without.activations > with_checkpoints.activations
    assert without.stash < with_checkpoints.stash
    assert without.total > with_checkpoints.total
    # pipelined PopTorch recomputes every stage's forward either way (RecomputationType.Pipeline)
    assert plan.samples_per_second == published_plan.samples_per_second


def test_fewer_replicas_are_slower(published_plan):
    plan = capstone.plan_pod16(dataclasses.replace(PUBLISHED, replicas=1))
    assert plan.samples_per_second < published_plan.samples_per_second / 3


def test_the_recipe_shrunk_trains_like_plain_pytorch():
    config = capstone.PodConfig(ipus_per_replica=4, replicas=2, accumulation=10, half=False)
    tiny = dict(width=32, depth=3, heads=2, vocab=100)

    def build():
        torch.manual_seed(0)
        return capstone.bert(config, device="cpu", **tiny)

    def data(step):
        return capstone.batch(config, "cpu", vocab=100, micro_batch=2, seed=step)

    model = build()
    training = poptorch.trainingModel(model, capstone.options(config, plan_only=False),
                                      capstone.optimizer(model, config))
    reference = build()
    lamb = capstone.optimizer(reference, config)
    micro_batches = config.accumulation * config.replicas
    for step in range(2):
        training(*data(step))
        lamb.zero_grad()
        for chunk in zip(*(t.chunk(micro_batches) for t in data(step))):
            reference(*chunk)[1].backward()
        for p in reference.parameters():
            p.grad /= micro_batches
        lamb.step()
    # Compared by what they compute: the attention keys' bias has an exactly zero gradient
    # (softmax ignores a shift shared by all scores), so its float32 gradient is rounding noise
    # that LAMB scales up to a full step, differently for each order of summation.
    held_out = data(99)
    for ours, theirs in zip(model(*held_out), reference(*held_out)):
        torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-5)
    assert training.plan.placement.ipus_acquired == 8
