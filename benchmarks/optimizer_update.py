"""Optimizer update speed: sliced (the default) / whole-tensor (the reference), side by side.

The mixed-precision tutorial's model (benchmarks/mixed_precision_model.py) with its AdamW
(--execution-half --optimizer-half: float16 weights and gradients, loss scale 1024, or float32
with --float32) gets the same gradients, one update after another, once through the sliced update
(poptorch/_sliced_update.py) and once through the whole-tensor reference, alternating so a busy
machine slows both alike. Both give the same bits (tests/poptorch/test_sliced_update.py); this
measures the time. Reports wall and CPU time per update and their ratios.

    python benchmarks/optimizer_update.py [--rounds 5] [--updates 4] [--float32] [--threads N]
"""
import argparse
import time

import torch
from mixed_precision_model import training_model

from ipu_tutorials import poptorch


def optimizer_scale(half: bool) -> float:
    """The walkthrough's loss scale: 1024 with --optimizer-half."""
    return 1024.0 if half else 1.0


def main(rounds: int, count: int, half: bool) -> None:
    runs = {}
    for name in ("sliced", "whole tensor"):
        model, _, _ = training_model(execution_half=half, optimizer_half=half)
        optimizer = poptorch.optim.AdamW(model.parameters(), lr=0.001,
                                         accum_type=torch.float16 if half else torch.float32,
                                         loss_scaling=optimizer_scale(half))
        update = (optimizer.apply_gradients if name == "sliced" else
                  torch.no_grad()(optimizer._apply_per_tensor))
        generator = torch.Generator().manual_seed(0)
        grads = {p: (torch.randn(p.shape, generator=generator) * optimizer_scale(half) * 1e-2)
                 .to(p.dtype) for p in model.parameters()}
        update(grads, 1 / optimizer_scale(half))  # state allocated, caches warm
        runs[name] = update, grads
    wall, cpu = dict.fromkeys(runs, 0.0), dict.fromkeys(runs, 0.0)
    for _ in range(rounds):
        for name, (update, grads) in runs.items():
            started, cpu_started = time.perf_counter(), time.process_time()
            for _ in range(count):
                update(grads, 1 / optimizer_scale(half))
            wall[name] += time.perf_counter() - started
            cpu[name] += time.process_time() - cpu_started
    n = rounds * count
    for name in runs:
        print(f"{name:>12}: {wall[name] / n * 1e3:7.1f} ms wall, {cpu[name] / n * 1e3:7.1f} ms CPU "
              f"per update")
    print(f"sliced / whole tensor: {wall['sliced'] / wall['whole tensor']:.2f} wall, "
          f"{cpu['sliced'] / cpu['whole tensor']:.2f} CPU ({torch.get_num_threads()} threads)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--updates", type=int, default=4)
    parser.add_argument("--float32", action="store_true", help="float32 weights and state")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    main(args.rounds, args.updates, not args.float32)
