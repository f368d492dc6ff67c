"""The hub's tests run in .ci/hub (they create Unix accounts, so they need root) or with
IPU_HUB_TESTS=1; each skips with one line saying what is missing."""
import os

import pytest

from .hub import skip_reason


def pytest_collection_modifyitems(config, items):
    reason = None
    if not os.environ.get("IPU_HUB_TESTS"):
        reason = ("the hub's tests create Unix accounts and run in .ci/hub: "
                  "IPU_HUB_TESTS=1 pytest tests/hub, as root")
    reason = reason or skip_reason()
    if reason:
        for item in items:
            if ("tests/hub/" in str(item.fspath).replace(os.sep, "/") and
                    not item.get_closest_marker("no_hub")):
                item.add_marker(pytest.mark.skip(reason=reason))


def pytest_configure(config):
    config.addinivalue_line("markers", "no_hub: a hub test that needs no running hub")
