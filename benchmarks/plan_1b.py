"""Compile-only planning of a ~1B-parameter transformer on meta tensors across 16 IPUs.

Targets: planning (wrapping plus compile) in <= 5 s, and <= 500 MB of memory added on top of
the process that imported torch and built the model. The model is built on the meta device,
so no weights are allocated; torch's own import, about 500 MB here, is reported separately.

    python benchmarks/plan_1b.py
"""
import sys
import time

import torch

from planning_budget import peak_mb, verdict

from ipu_tutorials import poptorch
from ipu_tutorials.classroom.explorers.memory import even_split
from ipu_tutorials.tutorial.models import TransformerLM, parameter_count, split_layers

TARGET_SECONDS, TARGET_MB = 5.0, 500.0


def main() -> int:
    imported = peak_mb()
    with torch.device("meta"):
        model = TransformerLM(width=2048, depth=20, heads=16, context=128,
                              recompute_checkpoint_every_layer=True).half()
    split_layers(model, even_split(len(model.layers), 16))
    built = peak_mb()
    started = time.perf_counter()
    opts = poptorch.Options().useOfflineIpuTarget(2).showCompilationProgressBar(False)
    opts.Training.gradientAccumulation(64)
    opts.TensorLocations.setOptimizerLocation(
        poptorch.TensorLocationSettings().useOnChipStorage(False))
    optimizer = poptorch.optim.AdamW(model.parameters(), accum_type=torch.float16)
    training = poptorch.trainingModel(model, opts, optimizer)
    tokens = torch.zeros(4 * 64, 128, dtype=torch.long, device="meta")
    training.compile(tokens, tokens)
    seconds = time.perf_counter() - started
    added = peak_mb() - built
    plan = training.plan
    print(f"{parameter_count(model) / 1e9:.2f}B parameters, {len(plan.graph.ops)} ops, "
          f"{plan.placement.ipus_per_replica} IPUs, fits: {plan.memory.fits}, "
          f"simulated {plan.samples_per_second:,.0f} sequences/s")
    return verdict(seconds, added, imported, TARGET_SECONDS, TARGET_MB)


if __name__ == "__main__":
    sys.exit(main())
