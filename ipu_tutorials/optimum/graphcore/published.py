"""BERT-Large phase 1 on a Bow Pod16 through an IPUConfig: the published run, planned on meta tensors."""
from __future__ import annotations

import dataclasses

import torch

from ... import poptorch
from ...simulator.hardware import set_system
from .ipu_configuration import IPUConfig
from .modeling_utils import to_pipelined

# The run: graphcore/examples@v3.4.1 nlp/bert/pytorch/configs_pretraining.yml pretrain_large_128
# (4 IPUs per replica, layers [3, 7, 7, 7], 4 replicas, micro-batch 8, gradient accumulation
# 2048, LAMB, loss scale 4096, optimizer state off chip with replicated tensor sharding, matmul
# proportions [0.15, 0.25, 0.25, 0.25], embedding serialization 2, recompute every layer).
# Its throughput: Graphcore's Performance Results page, https://www.graphcore.ai/performance-results
# (Bow Pod training table, "BERT Large Ph1 Pre-Training (SL128) - Packed, Bow Pod16, SDK 3.3,
# PyTorch": 5,600 items/s; an SDK 3.3 row, graphcore/examples v3.3.0 being tagged 2023-06-30;
# mirrored at https://www.graphcore.cn/performance-results/).
PUBLISHED_SEQUENCES_PER_SECOND = 5600
MICRO_BATCH, SEQUENCE = 8, 128
LOSS_SCALING = 4096


def bert_large_pod16_ipu_config() -> IPUConfig:
    """The published Bow Pod16 configuration as an IPUConfig, but for its embedding
    serialization (2): the simulator's pipelined BERT does not serialize an embedding tied to
    its MLM head (docs/ipuconfig.md). Other values: v0.5's defaults."""
    return IPUConfig(layers_per_ipu=[3, 7, 7, 7], ipus_per_replica=4, replication_factor=4,
                     gradient_accumulation_steps=2048, device_iterations=1,
                     optimizer_state_offchip=True, replicated_tensor_sharding=True,
                     matmul_proportion=[0.15, 0.25, 0.25, 0.25],
                     recompute_checkpoint_every_layer=True, defaults_from="v0.5")


def bert_large_config():
    """BERT-Large: 24 layers, width 1024, 16 heads, feed-forward 4096, vocabulary 30,522."""
    from transformers import BertConfig

    return BertConfig(vocab_size=30522, hidden_size=1024, num_hidden_layers=24,
                      num_attention_heads=16, intermediate_size=4096, max_position_embeddings=512)


@dataclasses.dataclass
class PlannedRun:
    """The compiled executor's plan, and the memory error if the plan does not fit."""

    plan: object  # ipu_tutorials.simulator.compile.Plan
    out_of_memory: poptorch.OutOfMemoryError | None

    @property
    def sequences_per_second(self) -> float:
        return self.plan.samples_per_second


def plan_bert_large(ipu_config: IPUConfig | None = None) -> PlannedRun:
    """Compile BertForPreTraining (float16, meta tensors, LAMB) on a simulated Bow Pod16.

    Returns the plan even when it does not fit: the OutOfMemoryError carries the plan.
    """
    from transformers import BertForPreTraining

    ipu_config = ipu_config or bert_large_pod16_ipu_config()
    set_system("ipu21", 16)
    with torch.device("meta"):
        model = BertForPreTraining(bert_large_config()).half()
    model = to_pipelined(model, ipu_config).parallelize()
    optimizer = poptorch.optim.LAMB(model.parameters(), loss_scaling=LOSS_SCALING,
                                    accum_type=torch.float16)
    opts = ipu_config.to_options(compile_only=True)
    opts.showCompilationProgressBar(False)
    executor = poptorch.trainingModel(model, opts, optimizer)
    rows = MICRO_BATCH * ipu_config.batch_size_factor()
    tokens = torch.zeros(rows, SEQUENCE, dtype=torch.long, device="meta")
    try:
        executor.compile(input_ids=tokens, labels=tokens,
                         next_sentence_label=torch.zeros(rows, dtype=torch.long, device="meta"))
    except poptorch.OutOfMemoryError as error:
        return PlannedRun(error.plan, error)
    return PlannedRun(executor.plan, None)
