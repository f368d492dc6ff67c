"""Float16 training speed: the mixed-precision tutorial's model, float16 step / float32 step.

Graphcore's PopTorch mixed-precision tutorial model (benchmarks/mixed_precision_model.py) is
trained through the simulator in float32 and with `--execution-half --optimizer-half` (float16
model, data and optimizer accumulators, loss scale 1024), side by side in one process: rounds
alternate between the two so a busy machine slows both alike. The simulator emulates float16
(simulator/half.py). With --native it also times the float16 model on PyTorch's own CPU float16
kernels, what the simulator did before the emulation. Target: float16 / float32 <= 1.5.

    python benchmarks/half_speed.py [--rounds 5] [--steps 4] [--native] [--threads N]
"""
import argparse
import contextlib
import sys
import time
from unittest import mock

import torch
from mixed_precision_model import synthetic_images, training_model

TARGET = 1.5


def native_float16():
    """Switch the emulation off: every float16 op runs PyTorch's CPU float16 kernel."""
    return mock.patch("ipu_tutorials.simulator.half.involves_half", lambda *a, **k: False)


def main(rounds: int, steps: int, native: bool) -> int:
    runs = {"float32": (False, contextlib.nullcontext), "float16": (True, contextlib.nullcontext)}
    if native:
        runs["float16, CPU float16 kernels"] = (True, native_float16)
    models, seconds, cpu = {}, dict.fromkeys(runs, 0.0), dict.fromkeys(runs, 0.0)
    for name, (half, context) in runs.items():
        _, _, model = training_model(execution_half=half, optimizer_half=half)
        models[name] = model, synthetic_images(12, half)
        with context():
            model(*models[name][1])  # compile and warm up
    for _ in range(rounds):
        for name, (_, context) in runs.items():
            model, batch = models[name]
            with context():
                started, cpu_started = time.perf_counter(), time.process_time()
                for _ in range(steps):
                    model(*batch)
                seconds[name] += time.perf_counter() - started
                cpu[name] += time.process_time() - cpu_started
    per_step = {name: s / (rounds * steps) for name, s in seconds.items()}
    for name, s in per_step.items():
        print(f"{name:>30}: {s * 1e3:7.1f} ms per training step "
              f"({s / per_step['float32']:.2f} x float32; CPU time "
              f"{cpu[name] / cpu['float32']:.2f} x)")
    ratio = per_step["float16"] / per_step["float32"]
    print(f"float16 / float32 step time: {ratio:.2f} (target <= {TARGET})")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--native", action="store_true",
                        help="also time PyTorch's CPU float16 kernels (slow: the 'before' figure)")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads (default: torch's default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    sys.exit(main(args.rounds, args.steps, args.native))
