"""The default `python mnist_pipeline.py` run, offline: wall time and test accuracy.

Targets (issue 3): the whole run, from the interpreter starting to the last line printed,
in <= 60 s on a 2-core machine, reaching >= 96% test accuracy on the embedded digits. The
run happens in an empty directory, so no full MNIST is found on disk; with no network the
script falls back to the embedded digits, and this benchmark checks that it did.

    python benchmarks/mnist_default_run.py [extra mnist_pipeline.py options]
"""
import os
import re
import subprocess
import sys
import tempfile
import time

TARGET_SECONDS, TARGET_ACCURACY = 60.0, 96.0
SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "mnist_pipeline.py")


def main(extra: list[str]) -> int:
    with tempfile.TemporaryDirectory() as directory:
        started = time.perf_counter()
        result = subprocess.run([sys.executable, SCRIPT, *extra], cwd=directory,
                                capture_output=True, text=True)
        seconds = time.perf_counter() - started
    print(result.stdout)
    if result.returncode:
        print(result.stderr, file=sys.stderr)
        return 1
    accuracy = float(re.search(r"Accuracy on test set: ([\d.]+)%", result.stdout).group(1))
    embedded = "embedded MNIST digits" in result.stdout
    print(f"wall time {seconds:.1f} s (target <= {TARGET_SECONDS:.0f}), test accuracy "
          f"{accuracy:.2f}% (target >= {TARGET_ACCURACY}), data: "
          f"{'embedded digits' if embedded else 'full MNIST'}")
    return 0 if seconds <= TARGET_SECONDS and accuracy >= TARGET_ACCURACY and embedded else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
