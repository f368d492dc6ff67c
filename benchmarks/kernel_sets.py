"""The example scripts' simulated figures are the same under every CPU kernel set and thread count.

torch picks its CPU kernels at start-up (ATEN_CPU_CAPABILITY forces a choice) and sums in
another order on another thread count, so trained weights, losses and the test accuracy may
move in their last digits. What the simulator prints (time per step, throughput, placement,
memory plan) comes from the cost model and must not move at all. This runs each script, short,
under each kernel set, drops the lines that come from training (losses, accuracies, wall
time), and checks that everything else is identical.

    python benchmarks/kernel_sets.py [CAPABILITY:THREADS ...]   (default: native:2 avx2:1 default:2)
"""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS = {"mnist_pipeline.py": ["--strategy", "sharded", "--epochs", "1", "--no-progress"],
        "lightning_mnist.py": ["--epochs", "1"]}
TRAINING = re.compile(r"loss|accuracy|Epoch|it/s|\d+:\d\d", re.I)
WALL = re.compile(r"Host wall time: [\d.]+ s")  # the rest of that line is simulated


def simulated_lines(script: str, capability: str, threads: str) -> list[str]:
    env = {**os.environ, "OMP_NUM_THREADS": threads, "PYTHONPATH": ROOT}
    if capability != "native":
        env["ATEN_CPU_CAPABILITY"] = capability
    with tempfile.TemporaryDirectory() as directory:
        result = subprocess.run([sys.executable, os.path.join(ROOT, script), *RUNS[script]],
                                cwd=directory, env=env, capture_output=True, text=True, timeout=1800)
    if result.returncode:
        raise SystemExit(f"{script} under {capability}:{threads} failed:\n{result.stderr[-2000:]}")
    lines = (WALL.sub("Host wall time: (varies)", line) for line in result.stdout.splitlines())
    return [line for line in lines if line.strip() and not TRAINING.search(line)]


def main(sets: list[str]) -> int:
    failed = 0
    for script in RUNS:
        runs = {s: simulated_lines(script, *s.split(":")) for s in sets}
        first = runs[sets[0]]
        for name, lines in runs.items():
            same = lines == first
            failed += not same
            print(f"{script} {name}: {len(lines)} simulated lines, "
                  f"{'identical' if same else 'DIFFERENT from ' + sets[0]}")
            if not same:
                print("\n".join(f"  {a!r} != {b!r}" for a, b in zip(lines, first) if a != b))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["native:2", "avx2:1", "default:2"]))
