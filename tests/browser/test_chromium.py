"""Without a Chromium the browser tests skip, and the reason says how to install one."""
import os

import pytest

from tests.browser import conftest


def test_no_chromium_skips_with_an_install_hint(monkeypatch):
    monkeypatch.delenv("CHROMIUM", raising=False)
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    assert conftest.find_chromium() is None
    with pytest.raises(pytest.skip.Exception, match=r"apt-get install -y chromium"):
        conftest.chromium_or_skip()


def test_chromium_environment_variable_wins(monkeypatch, tmp_path):
    browser = tmp_path / "chrome"
    browser.write_text("#!/bin/sh\n")
    browser.chmod(0o755)
    monkeypatch.setenv("CHROMIUM", str(browser))
    assert conftest.find_chromium() == str(browser)
