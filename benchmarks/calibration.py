"""Print the calibration table of docs/cost-model.md: published runs against the simulator's plans.

Each row is a published configuration planned on the meta device with the memory check on;
tests/calibration/test_published_runs.py asserts the same ratios.

    python benchmarks/calibration.py
"""
import sys

from ipu_tutorials.calibration.published_runs import all_runs, calibration_table


def main() -> int:
    runs = all_runs()
    print(calibration_table(runs))
    print()
    for run in runs:
        print(f"{run.name}:\n  {run.plan.breakdown_text()}")
    return 0 if all(1 / r.tolerance <= r.ratio <= r.tolerance for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
