"""Print the validation table of docs/cost-model.md: published runs the cost model was NOT
calibrated on, against the simulator's plans of the same configurations.

Each row is rebuilt from its published configuration on the meta device with the memory check
on; tests/simulator/test_validation.py asserts the same ratios (within 1.25x either way).
benchmarks/calibration.py prints the calibration runs, kept apart.

    python benchmarks/validation.py
"""
import sys

from ipu_tutorials.calibration.published_runs import calibration_table
from ipu_tutorials.calibration.validation_runs import all_runs


def main() -> int:
    runs = all_runs()
    print(calibration_table(runs))
    ratios = [run.ratio for run in runs]
    print(f"\n{len(runs)} runs; simulated / published from {min(ratios):.2f} to {max(ratios):.2f}")
    for run in runs:
        print(f"{run.name}:\n  {run.plan.breakdown_text()}")
    return 0 if all(1 / r.tolerance <= r.ratio <= r.tolerance for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
