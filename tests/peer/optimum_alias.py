"""A pytest plugin: `optimum.graphcore` and `poptorch` import as ipu_tutorials' versions, and the
optimum-graphcore tests that need the SDK, the network or IPU hardware are skipped with the reason.

Loaded by run_optimum_suite.py with `-p optimum_alias`; the aliases are the same module objects
(not copies), so `optimum.graphcore.IPUConfig is ipu_tutorials.optimum.graphcore.IPUConfig`.
"""
from __future__ import annotations

import pytest

import import_alias

ALIASES = {"optimum.graphcore": "ipu_tutorials.optimum.graphcore", "poptorch": "ipu_tutorials.poptorch"}

NETWORK = "network: needs the Hugging Face Hub"
# (test file, substring of the test's node id) -> why it cannot run here.
TEST_SKIPS = {
    ("test_trainer.py", "IPUTrainerIntegrationWithHubTester"):
        NETWORK + " (pushes to the staging Hub with a user token)",
}


class _RemovedFromHub:
    """A huggingface_hub name that hub 1.0 removed; only the Hub push tests (skipped) use it."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError("removed from huggingface_hub 1.0; needed only by tests that push to the Hub")


def _patch_removed_hub_names() -> None:
    """test_trainer.py imports HfFolder and Repository at module level, for its Hub tests only."""
    import huggingface_hub

    for name in ("HfFolder", "Repository"):
        if not hasattr(huggingface_hub, name):
            setattr(huggingface_hub, name, type(name, (_RemovedFromHub,), {}))


def install() -> None:
    import_alias.install(ALIASES)
    _patch_removed_hub_names()


install()


def skip_reason(nodeid: str) -> str | None:
    for (file, fragment), reason in TEST_SKIPS.items():
        if nodeid.split("::")[0].endswith(file) and fragment in nodeid:
            return reason
    return None


def pytest_collection_modifyitems(config, items):
    for item in items:
        reason = skip_reason(item.nodeid)
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))
