"""`python lightning_mnist.py` beside the same training in plain PopTorch, offline, in one run.

Targets (issue 12): the Lightning run, from the interpreter starting to the last line printed,
in <= 60 s on this 2-core machine, reaching >= 95% test accuracy on the embedded digits. The
same work through `mnist_pipeline.py` (sharded, micro-batch 40, 5 device iterations, 5
epochs, no replication) runs beside it, so a loaded machine shows up as a ratio: Lightning's
cost over PopTorch's loop is reported as `lightning / poptorch` wall time and CPU time.

    python benchmarks/lightning_mnist_run.py
"""
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

TARGET_SECONDS, TARGET_ACCURACY = 60.0, 95.0
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS = {"lightning": ["lightning_mnist.py"],
        "poptorch": ["mnist_pipeline.py", "--strategy", "sharded", "--epochs", "5",
                     "--device-iterations", "5", "--gradient-accumulation", "1", "--no-progress"]}


def timed(args: list[str]) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the child, stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory() as directory:
        started = time.perf_counter()
        env = dict(os.environ, PYTHONPATH=ROOT)
        result = subprocess.run([sys.executable, os.path.join(ROOT, args[0]), *args[1:]],
                                cwd=directory, capture_output=True, text=True, env=env)
        wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode:
        raise SystemExit(result.stderr)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), result.stdout


def main() -> int:
    measured = {name: timed(args) for name, args in RUNS.items()}
    for name, (wall, cpu, out) in measured.items():
        accuracy = float(re.search(r"Accuracy on test set: ([\d.]+)%", out).group(1))
        print(f"{name:>9}: wall {wall:6.1f} s, CPU {cpu:6.1f} s, test accuracy {accuracy:.2f}%")
    wall, cpu, out = measured["lightning"]
    accuracy = float(re.search(r"Accuracy on test set: ([\d.]+)%", out).group(1))
    print(f"lightning / poptorch: wall {wall / measured['poptorch'][0]:.2f}x, "
          f"CPU {cpu / measured['poptorch'][1]:.2f}x")
    print(f"targets: wall <= {TARGET_SECONDS:.0f} s, accuracy >= {TARGET_ACCURACY}%")
    return 0 if wall <= TARGET_SECONDS and accuracy >= TARGET_ACCURACY else 1


if __name__ == "__main__":
    sys.exit(main())
