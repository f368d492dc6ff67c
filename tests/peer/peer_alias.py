"""A pytest plugin that runs PopTorch's and Lightning 2.0.9's own tests against ipu_tutorials.

Loaded through PYTEST_PLUGINS by run_peer_suites.py (never by the project's own pytest run). It
installs import aliases (`import poptorch` gives ipu_tutorials.poptorch), turns the rows of
peer_table.py into skip / xfail marks, and writes one JSON line per test to $PEER_RESULTS.
"""
from __future__ import annotations

import json
import os

import pytest

import import_alias
import peer_table

# alias -> the module that answers for it (a prefix match: "poptorch.optim" -> "...poptorch.optim")
ALIASES = {
    "poptorch.poptorch_core": "peer_core",
    "poptorch": "ipu_tutorials.poptorch",
    "popdist": "ipu_tutorials.popdist",
    "lightning.pytorch.accelerators.ipu": "peer_lightning_ipu",
    "lightning.pytorch.strategies.ipu": "peer_lightning_ipu",
    "lightning.pytorch.plugins.precision.ipu": "peer_lightning_ipu",
}


def install_aliases() -> None:
    import_alias.install(ALIASES)
    if os.environ.get("PEER_SUITE") == "lightning":
        import peer_lightning_ipu
        peer_lightning_ipu.install()


install_aliases()


def pytest_collection_modifyitems(session, config, items):
    suite = os.environ.get("PEER_SUITE", "poptorch")
    for item in items:
        row = peer_table.classify(suite, item.nodeid)
        if row is None:
            continue
        kind, reason = row
        if kind == peer_table.DIFFERENCE:
            item.add_marker(pytest.mark.xfail(reason=f"{kind}: {reason}", strict=False))
        else:
            item.add_marker(pytest.mark.skip(reason=f"{kind}: {reason}"), append=False)


# A test may start its own pytest (PYTEST_PLUGINS loads this plugin there too); only the
# process the runner started records results, so nothing is counted twice.
os.environ.setdefault("PEER_RECORDING_PID", str(os.getpid()))


def _write(record: dict) -> None:
    path = os.environ.get("PEER_RESULTS")
    if path and os.environ["PEER_RECORDING_PID"] == str(os.getpid()):
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")


def pytest_runtest_logreport(report):
    failed_setup = report.when == "setup" and report.outcome != "passed"
    if report.when != "call" and not failed_setup:
        return
    outcome = report.outcome
    reason = ""
    if hasattr(report, "wasxfail"):
        outcome = "xpassed" if report.outcome == "passed" else "xfailed"
        reason = report.wasxfail
    elif report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    elif report.failed:
        reason = (report.longrepr.reprcrash.message if hasattr(report.longrepr, "reprcrash")
                  and report.longrepr.reprcrash else str(report.longrepr)[-300:])
    _write({"test": report.nodeid, "outcome": outcome, "reason": reason.splitlines()[0][:300]
            if reason else ""})
