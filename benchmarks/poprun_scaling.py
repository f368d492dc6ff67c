"""Host throughput of 8 replicas: 1 instance vs 2 instances under poprun, side by side.

The tutorial CNN (B1..B4 pipelined over 4 IPUs) with 8 replicas on a simulated Pod64, micro-
batch 8, gradient accumulation 8: each call trains on 512 images. Both runs go through poprun
(1 instance x 8 replicas, then 2 instances x 4), which gives each instance its share of the
cores; rounds alternate so that a busy machine slows both alike. Every instance runs one torch
thread (OMP_NUM_THREADS=1): the ops of a micro-batch of 8 are too small for intra-op threads,
and on a loaded machine spinning OpenMP threads make a 2-thread instance many times slower,
which would flatter the ratio. So the comparison is one process's worth of host work against
two. After compiling and one warm-up call, every instance times its calls; the run's
throughput is the images of all instances over the slowest instance's time. Target:
2 instances / 1 instance >= 1.5.

    python benchmarks/poprun_scaling.py [--rounds 3] [--calls 6]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPLICAS, MICRO_BATCH, ACCUMULATION = 8, 8, 8
TARGET = 1.5


def worker(calls: int, out_dir: str) -> None:
    """One instance: compile, warm up, then time `calls` calls of this instance's replicas."""
    import torch

    from ipu_tutorials import popdist, poptorch, tutorial
    from ipu_tutorials.support.atomic_io import write_json
    import ipu_tutorials.popdist.poptorch as popdist_poptorch
    from ipu_tutorials.tutorial.models import Network, TrainingModelWithLoss

    opts = popdist_poptorch.Options()
    opts.setExecutionStrategy(tutorial.strategy("pipelined"))
    opts.Training.gradientAccumulation(ACCUMULATION)
    opts.showCompilationProgressBar(False)
    torch.manual_seed(0)
    net = Network()
    model = poptorch.trainingModel(TrainingModelWithLoss(net), opts,
                                   poptorch.optim.AdamW(net.parameters(), lr=0.001))
    samples = MICRO_BATCH * ACCUMULATION * popdist.getNumLocalReplicas()
    images, labels = torch.randn(samples, 1, 28, 28), torch.randint(0, 10, (samples,))
    model(images, labels)  # compile, join the other instance, warm up
    started = time.perf_counter()
    for _ in range(calls):
        model(images, labels)
    seconds = time.perf_counter() - started
    write_json(os.path.join(out_dir, f"instance-{popdist.getInstanceIndex()}.json"),
               {"samples": samples * calls, "seconds": seconds, "threads": torch.get_num_threads()})


def launch(instances: int, calls: int) -> tuple[float, int]:
    """(images per second over every instance, torch threads per instance) of one poprun run."""
    with tempfile.TemporaryDirectory() as out_dir:
        command = [sys.executable, "-m", "ipu_tutorials.poprun", "--num-instances",
                   str(instances), "--num-replicas", str(REPLICAS), "python",
                   os.path.abspath(__file__), "--worker", "--calls", str(calls),
                   "--out", out_dir]
        env = {**os.environ, "PYTHONPATH": ROOT, "IPU_TUTORIALS_NUM_IPUS": "64"}
        env["OMP_NUM_THREADS"] = "1"  # see the module docstring
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
        if done.returncode:
            raise RuntimeError(f"poprun failed:\n{done.stdout}\n{done.stderr}")
        results = [json.load(open(os.path.join(out_dir, name))) for name in os.listdir(out_dir)]
    total = sum(r["samples"] for r in results)
    return total / max(r["seconds"] for r in results), results[0]["threads"]


def main(rounds: int, calls: int) -> int:
    speeds: dict[int, list[float]] = {1: [], 2: []}
    for round_index in range(rounds):
        for instances in (1, 2) if round_index % 2 == 0 else (2, 1):
            speed, threads = launch(instances, calls)
            speeds[instances].append(speed)
            print(f"round {round_index + 1}: {instances} instance(s) x "
                  f"{REPLICAS // instances} replicas, {threads} torch thread(s) each: "
                  f"{speed:,.0f} images/s (host)", flush=True)
    one, two = (statistics.median(speeds[n]) for n in (1, 2))
    ratio = two / one
    print(f"median host throughput: 1 instance {one:,.0f} images/s, 2 instances {two:,.0f} "
          f"images/s; ratio {ratio:.2f} (target >= {TARGET}) on {os.cpu_count()} cores")
    return 0 if ratio >= TARGET else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=6)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.worker:
        worker(arguments.calls, arguments.out)
        sys.exit(0)
    sys.exit(main(arguments.rounds, arguments.calls))
