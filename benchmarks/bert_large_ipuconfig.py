"""BERT-Large phase 1 through an IPUConfig with the published Bow Pod16 configuration.

Compiles BertForPreTraining (transformers, float16, on meta tensors) pipelined by
the published configuration (`published.bert_large_pod16_ipu_config()`: layers [3, 7, 7, 7],
4 replicas, gradient accumulation 2048, optimizer state off chip and sharded, matmul
proportions [0.15, 0.25, 0.25, 0.25], a recomputation checkpoint every layer) on a simulated
Bow Pod16, reports whether the memory plan fits, then the simulated throughput with the memory
check off (as tests/simulator/test_costs.py does for the simulator's own BERT-Large), next to
the published 5,600 sequences/s (https://www.graphcore.ai/performance-results, the SDK 3.3
PyTorch row). Needs transformers.

    python benchmarks/bert_large_ipuconfig.py
"""
import sys
import time

import torch

from ipu_tutorials.optimum.graphcore.modeling_utils import to_pipelined
from ipu_tutorials.optimum.graphcore.published import (LOSS_SCALING, MICRO_BATCH,
                                                       PUBLISHED_SEQUENCES_PER_SECOND, SEQUENCE,
                                                       bert_large_config,
                                                       bert_large_pod16_ipu_config,
                                                       plan_bert_large)
from ipu_tutorials import poptorch
from ipu_tutorials.support import environment
from ipu_tutorials.poptorch import _to_simulator
from ipu_tutorials.simulator.capture import capture
from ipu_tutorials.simulator.compile import compile_plan


def unchecked_plan(ipu_config):
    """The same compile with the memory check off: simulator internals, benchmark only."""
    from transformers import BertForPreTraining

    with torch.device("meta"):
        model = BertForPreTraining(bert_large_config()).half()
    model = to_pipelined(model, ipu_config).parallelize()
    optimizer = poptorch.optim.LAMB(model.parameters(), loss_scaling=LOSS_SCALING,
                                    accum_type=torch.float16)
    tokens = torch.zeros(MICRO_BATCH, SEQUENCE, dtype=torch.long, device="meta")
    kwargs = {"input_ids": tokens, "labels": tokens,
              "next_sentence_label": torch.zeros(MICRO_BATCH, dtype=torch.long, device="meta")}
    config = _to_simulator.options_spec(ipu_config.to_options(compile_only=True), True,
                                        optimizer, environment.read(), micro_batch=MICRO_BATCH)
    return compile_plan(capture(model, (), kwargs), config, check_memory=False)


def main() -> int:
    started = time.perf_counter()
    ipu_config = bert_large_pod16_ipu_config()
    run = plan_bert_large(ipu_config)
    print(f"IPUConfig: {ipu_config.to_json_string().strip()}")
    if run.out_of_memory is None:
        print("memory plan fits on every IPU")
    else:
        print(f"memory plan does not fit:\n{run.out_of_memory}")
    plan = unchecked_plan(ipu_config)
    ratio = plan.samples_per_second / PUBLISHED_SEQUENCES_PER_SECOND
    print(f"\nplacement:\n{plan.placement.describe()}")
    print(f"\nsimulated throughput: {plan.samples_per_second:,.0f} sequences/s "
          f"(published: {PUBLISHED_SEQUENCES_PER_SECOND:,}; ratio {ratio:.2f})")
    print(f"host time: {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
