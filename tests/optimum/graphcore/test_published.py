"""published.py: BERT-Large phase 1's published Bow Pod16 run, planned through an IPUConfig."""
import pytest

from ipu_tutorials.optimum.graphcore.published import (PUBLISHED_SEQUENCES_PER_SECOND,
                                                       bert_large_config,
                                                       bert_large_pod16_ipu_config,
                                                       plan_bert_large)

pytest.importorskip("transformers")


def test_the_ipu_config_is_the_published_one():
    config = bert_large_pod16_ipu_config()
    assert ((config.layers_per_ipu, config.replication_factor, config._ipus_per_replica) ==
            ([3, 7, 7, 7], 4, 4))
    assert config.batch_size_factor() == 4 * 2048  # replicas x accumulation x 1 iteration
    assert config.optimizer_state_offchip and config.recompute_checkpoint_every_layer
    # was missing: pretrain_large_128 shards the optimizer state and sets the matmul proportions
    assert config.replicated_tensor_sharding
    assert config.matmul_proportion == [0.15, 0.25, 0.25, 0.25]


def test_bert_large_has_its_published_shape():
    config = bert_large_config()
    assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads,
            config.intermediate_size, config.vocab_size) == (24, 1024, 16, 4096, 30522)


def test_the_published_run_plans_at_the_ratio_docs_ipuconfig_md_quotes():
    run = plan_bert_large()
    ratio = run.sequences_per_second / PUBLISHED_SEQUENCES_PER_SECOND
    assert ratio == pytest.approx(0.80, abs=0.01)  # 4,490 of 5,600 sequences/s
    assert run.plan.samples_per_second == run.sequences_per_second


def test_a_config_that_does_not_fit_returns_its_plan_and_the_error():
    config = bert_large_pod16_ipu_config()
    config.layers_per_ipu = [24, 0, 0, 0]
    config.optimizer_state_offchip = False
    run = plan_bert_large(config)
    assert run.out_of_memory is not None and not run.plan.fits
    assert run.plan is run.out_of_memory.plan
