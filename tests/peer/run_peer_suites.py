"""Run PopTorch's or Lightning 2.0.9's own tests, unchanged, against ipu_tutorials.

    python tests/peer/run_peer_suites.py poptorch /path/to/graphcore/poptorch
    python tests/peer/run_peer_suites.py lightning /path/to/lightning-2.0.9 [--timeout 600]

The suites are read from the checkout given (nothing is fetched or copied). Each test file runs
in its own pytest process, under a time limit, with peer_alias loaded: `import poptorch` gives
ipu_tutorials.poptorch, Lightning 2.0.9's IPU modules give ipu_tutorials.lightning. The output
is one line per file (passed / applicable, known differences, not applicable) and one line per
test that does not apply, with its reason (peer_table.py holds them all).
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile

import peer_table

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent


def suite_files(suite: str, checkout: pathlib.Path) -> list[tuple[str, pathlib.Path, list[str]]]:
    """(group, test file, extra pytest args) for each file the suite runs."""
    if suite == "poptorch":
        tests = checkout / "tests"
        return [(group, tests / name, []) for group, names in peer_table.POPTORCH_FILES.items()
                for name in names]
    tests = checkout / "tests" / "tests_pytorch"
    return [("ipu", tests / name, ["-k", selection] if selection else [])
            for name, selection in peer_table.LIGHTNING_FILES.items()]


def pytest_command(path: pathlib.Path, extra: list[str], ini: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
            "-p", "no:nbval", "-c", ini, "--rootdir", str(path.parent), "-q", "-rN",
            "-W", "ignore::DeprecationWarning", str(path), *extra]


def environment(suite: str, checkout: pathlib.Path, results: str) -> dict[str, str]:
    # PYTEST_PLUGINS (not -p) so that a pytest a test starts itself gets the aliases too
    env = dict(os.environ, PEER_SUITE=suite, PEER_RESULTS=results, OMP_NUM_THREADS="1",
               PYTEST_PLUGINS="peer_alias")
    env.pop("PEER_RECORDING_PID", None)
    paths = [str(HERE), str(REPO)]
    if suite == "lightning":
        paths.append(str(checkout / "tests"))  # its tests import `tests_pytorch.helpers`
    env["PYTHONPATH"] = os.pathsep.join(paths + [os.environ.get("PYTHONPATH", "")])
    return env


def run_file(suite, checkout, path, extra, timeout) -> tuple[list[dict], str]:
    """Every test's record, and "" or why the file stopped early (time limit, crash)."""
    with tempfile.TemporaryDirectory() as tmp:
        results, ini = os.path.join(tmp, "results.jsonl"), os.path.join(tmp, "pytest.ini")
        pathlib.Path(ini).write_text("[pytest]\n")
        proc = subprocess.Popen(pytest_command(path, extra, ini), cwd=path.parent,
                                env=environment(suite, checkout, results), start_new_session=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            output, _ = proc.communicate(timeout=timeout)
            stopped = ("" if proc.returncode in (0, 1, 5) else
                       f"pytest exited with {proc.returncode}: {output.strip().splitlines()[-1:]}")
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            stopped = f"stopped at the {timeout} s time limit"
        records = [json.loads(line) for line in open(results)] if os.path.exists(results) else []
    return records, stopped


def tally(records: list[dict]) -> collections.Counter:
    """passed / failed / difference / not applicable counts of one file."""
    counts = collections.Counter()
    for record in records:
        outcome = record["outcome"]
        if outcome in ("passed", "xpassed"):
            counts["passed"] += 1
        elif outcome == "xfailed" and record["reason"].startswith(peer_table.DIFFERENCE):
            counts["difference"] += 1
        elif outcome in ("skipped", "xfailed"):
            counts["not applicable"] += 1
        else:
            counts["failed"] += 1
    counts["applicable"] = counts["passed"] + counts["failed"] + counts["difference"]
    return counts


def file_line(name: str, counts: collections.Counter, stopped: str) -> str:
    line = (f"{name:42s} {counts['passed']:4d} / {counts['applicable']:<4d} passed"
            f"  {counts['difference']:3d} known differences  {counts['not applicable']:4d} n/a")
    return line + (f"  [{stopped}]" if stopped else "")


def print_details(records: list[dict], show_passed: bool) -> None:
    for record in records:
        if record["outcome"] == "passed" and not show_passed:
            continue
        test = record["test"].split("::", 1)[-1]
        print(f"    {record['outcome']:8s} {test}  {record['reason']}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suite", choices=("poptorch", "lightning"))
    parser.add_argument("checkout", type=pathlib.Path, help="a local checkout of the project")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per file")
    parser.add_argument("--only", nargs="*", help="run only these file names")
    parser.add_argument("--summary", action="store_true", help="one line per file, no tests")
    parser.add_argument("--json", type=pathlib.Path, help="also write every record here")
    args = parser.parse_args(argv)
    if not (args.checkout / "tests").is_dir():
        parser.error(f"{args.checkout} has no tests/ directory: give the checkout's root")
    totals = collections.defaultdict(collections.Counter)
    everything = []
    for group, path, extra in suite_files(args.suite, args.checkout):
        if args.only and path.name not in args.only:
            continue
        records, stopped = run_file(args.suite, args.checkout, path, extra, args.timeout)
        counts = tally(records)
        totals[group].update(counts)
        everything += [dict(r, file=path.name, group=group) for r in records]
        print(file_line(path.name, counts, stopped), flush=True)
        if not args.summary:
            print_details(records, show_passed=False)
    for group, counts in totals.items():
        print(file_line(f"TOTAL {group}", counts, ""))
    if args.suite == "poptorch" and not args.only:
        for name, reason in peer_table.POPTORCH_NOT_RUN.items():
            print(f"not run: {name:36s} {reason}")
    if args.json:
        args.json.write_text(json.dumps(everything, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
