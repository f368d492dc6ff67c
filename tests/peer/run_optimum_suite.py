"""Run optimum-graphcore's own tests against ipu_tutorials, each file in its own process.

    python tests/peer/run_optimum_suite.py [/path/to/optimum-graphcore] [--timeout 900] [-k EXPR]

Only the imports change: `optimum.graphcore` and `poptorch` resolve to ipu_tutorials' modules
(optimum_alias.py). Files and tests that need the Poplar SDK, the network or IPU hardware are
skipped with the reason. Prints passed / applicable / skipped. Needs the `optimum-tests` extra.
The checkout is only read: each file runs in a scratch directory whose `tests` links to it.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import pathlib
import re
import signal
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
DEFAULT_CHECKOUT = os.environ.get("OPTIMUM_GRAPHCORE_CHECKOUT", "/work/peer/optimum-graphcore")

HUB = "network: loads checkpoints or datasets from the Hugging Face Hub"
# Whole files that cannot run here (not even import), with the reason.
FILE_SKIPS = {
    "test_custom_ops.py": "SDK: compiles Poplar custom ops (group_quantize, sdk_version_hash)",
    "test_examples.py": HUB + " (runs the example scripts on Hub models and datasets)",
    "test_examples_match_transformers.py": "network: clones transformers from GitHub",
    "test_pipelined_models.py": HUB + " (bert-base-uncased, t5-small ... and their tokenizers)",
    "test_trainer_seq2seq.py": HUB + " (t5-small, cnn_dailymail; marked @slow)",
    "generation/test_utils.py": HUB + " (hf-internal-testing/tiny-random-* checkpoints)",
    "generation/test_framework_agnostic.py": HUB + " (hf-internal-testing/tiny-random-* checkpoints)",
}
PIPELINES = HUB + " (pipeline tests build their models from hf-internal-testing checkpoints)"
# What the `optimum-tests` extra brings that the suite imports at collection: without one, every
# file would fail to collect and the count would read 0% for a missing install, not for us.
EXTRA_MODULES = ("parameterized", "datasets", "optimum", "accelerate", "sentencepiece")


def missing_extra_modules() -> list[str]:
    return [name for name in EXTRA_MODULES if importlib.util.find_spec(name) is None]


def file_skip_reason(relative: str) -> str | None:
    if relative.startswith("pipelines/"):
        return PIPELINES
    return FILE_SKIPS.get(relative)


def run_file(checkout: pathlib.Path, relative: str, timeout: float, keyword: str | None) -> list[tuple]:
    """[(test id, outcome, message)] for one test file, run in a fresh process."""
    with tempfile.TemporaryDirectory(prefix="optimum-suite-") as scratch:
        os.symlink(checkout / "tests", os.path.join(scratch, "tests"))
        report = os.path.join(scratch, "report.xml")
        command = [sys.executable, "-m", "pytest", f"tests/{relative}", "-p", "optimum_alias",
                   "-p", "no:cacheprovider", "-o", "addopts=", "-v", f"--junitxml={report}",
                   "--rootdir", scratch]
        command += ["-k", keyword] if keyword else []
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(HERE)]),
               "PYTHONDONTWRITEBYTECODE": "1", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
               "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "1", "WANDB_DISABLED": "true"}
        process = subprocess.Popen(command, cwd=scratch, env=env, start_new_session=True,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            output, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
            return finished_before_timeout(output, timeout)
        if not os.path.exists(report):
            return [(relative, "failed", "no report: " + output[-500:])]
        return parse_report(report)


def finished_before_timeout(output: str, timeout: float) -> list[tuple]:
    """The verbose lines of the tests that finished, and the one that ran out of time."""
    results = [(m[1], m[2].lower() if m[2] != "ERROR" else "failed", "")
               for m in re.finditer(r"^(\S+::\S+) (PASSED|FAILED|SKIPPED|ERROR)", output, flags=re.M)]
    last = output.rstrip().splitlines()[-1].split() if output.strip() else []
    name = last[0] if last and "::" in last[0] and len(last) == 1 else "the next test"
    return results + [(name, "failed", f"timed out after {timeout:.0f} s")]


def parse_report(path: str) -> list[tuple]:
    results = []
    for case in ET.parse(path).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name')}"
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = "skipped" if child.tag == "skipped" else "failed"
                message = (child.get("message") or "").splitlines()[0][:200] if child.get("message") else ""
        results.append((name, outcome, message))
    return results


def count_tests(path: pathlib.Path) -> int:
    """Test functions defined in a file that is not run (parametrized ones count once)."""
    return len(re.findall(r"^\s*def test_", path.read_text(), flags=re.M))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", nargs="?", default=DEFAULT_CHECKOUT)
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per test file")
    parser.add_argument("-k", dest="keyword", help="pytest -k expression")
    parser.add_argument("-v", action="store_true", help="list every failure")
    args = parser.parse_args(argv)
    checkout = pathlib.Path(args.checkout).resolve()
    if not (checkout / "tests").is_dir():
        print(f"error: {checkout} has no tests/ directory; pass an optimum-graphcore checkout")
        return 2
    missing = missing_extra_modules()
    if missing:
        print(f"error: optimum-graphcore's tests need the optimum-tests extra "
              f"(missing {', '.join(missing)}): pip install -e \".[optimum-tests]\"")
        return 2
    passed = applicable = 0
    skipped: dict[str, int] = {}
    for path in sorted((checkout / "tests").rglob("test_*.py")):
        relative = path.relative_to(checkout / "tests").as_posix()
        reason = file_skip_reason(relative)
        if reason:
            skipped[reason] = skipped.get(reason, 0) + count_tests(path)
            print(f"{relative}: skipped ({count_tests(path)} tests): {reason}")
            continue
        results = run_file(checkout, relative, args.timeout, args.keyword)
        ran = [r for r in results if r[1] != "skipped"]
        ok = sum(r[1] == "passed" for r in ran)
        passed, applicable = passed + ok, applicable + len(ran)
        for _, _, message in (r for r in results if r[1] == "skipped"):
            skipped[message] = skipped.get(message, 0) + 1
        print(f"{relative}: {ok}/{len(ran)} passed, {len(results) - len(ran)} skipped")
        for name, outcome, message in ran:
            if outcome != "passed" and args.v:
                print(f"    FAILED {name}: {message}")
    print(f"\npassed {passed} / applicable {applicable}"
          f" ({100 * passed / max(applicable, 1):.0f}%); skipped {sum(skipped.values())}:")
    for reason, count in sorted(skipped.items(), key=lambda kv: -kv[1]):
        print(f"  {count:4d}  {reason}")
    return 0 if passed == applicable else 1


if __name__ == "__main__":
    sys.exit(main())
