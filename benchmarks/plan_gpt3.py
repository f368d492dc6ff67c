"""Compile-only planning of GPT-3 175B (96 layers, hidden 12,288) pipelined and replicated
over a Bow Pod256, on meta tensors.

Targets: planning (capture plus compile) in <= 5 s and <= 1 GB peak memory added on top of
the process that imported torch and built the model on the meta device. The plan need not
fit: 175B float16 weights alone exceed the Pod256's in-processor memory, and the memory
plan says by how much (the memory check is off so that planning finishes).

    python benchmarks/plan_gpt3.py
"""
import dataclasses
import sys
import time

import torch

from planning_budget import peak_mb, verdict

from ipu_tutorials import poptorch
from ipu_tutorials.support import environment
from ipu_tutorials.classroom.explorers.memory import even_split
from ipu_tutorials.poptorch import _to_simulator
from ipu_tutorials.simulator import capture, compile_plan
from ipu_tutorials.simulator.hardware import System, ipu_spec
from ipu_tutorials.simulator.memory import format_bytes
from ipu_tutorials.tutorial.models import TransformerLM, parameter_count, split_layers

TARGET_SECONDS, TARGET_MB = 5.0, 1000.0
IPUS_PER_REPLICA, REPLICAS = 64, 4  # 256 IPUs


def main() -> int:
    imported = peak_mb()
    with torch.device("meta"):
        model = TransformerLM(vocab=50257, width=12288, depth=96, heads=96, context=2048,
                              recompute_checkpoint_every_layer=True).half()
    split_layers(model, even_split(len(model.layers), IPUS_PER_REPLICA))
    built = peak_mb()
    started = time.perf_counter()
    opts = poptorch.Options().replicationFactor(REPLICAS)
    opts.Training.gradientAccumulation(2 * IPUS_PER_REPLICA)
    opts.TensorLocations.setOptimizerLocation(
        poptorch.TensorLocationSettings().useOnChipStorage(False).useReplicatedTensorSharding(True))
    optimizer = poptorch.optim.AdamW(model.parameters(), accum_type=torch.float16)
    config = dataclasses.replace(_to_simulator.options_spec(opts, True, optimizer,
                                                            environment.read(), micro_batch=1),
                                 system=System(ipu_spec("ipu21"), 256))
    tokens = torch.zeros(1, 2048, dtype=torch.long, device="meta")
    plan = compile_plan(capture(model, (tokens, tokens), {}), config, check_memory=False)
    seconds = time.perf_counter() - started
    added = peak_mb() - built
    worst = max(plan.memory.ipus, key=lambda m: m.total)
    print(f"{parameter_count(model) / 1e9:.1f}B parameters, {len(plan.graph.ops)} ops, "
          f"{plan.placement.ipus_per_replica} IPUs x {REPLICAS} replicas, "
          f"{len(plan.placement.stages)} pipeline stages; fullest IPU {worst.ipu} needs "
          f"{format_bytes(worst.total)} of {format_bytes(worst.capacity)}; simulated "
          f"{plan.samples_per_second:,.2f} sequences/s")
    return verdict(seconds, added, imported, TARGET_SECONDS, TARGET_MB)


if __name__ == "__main__":
    sys.exit(main())
