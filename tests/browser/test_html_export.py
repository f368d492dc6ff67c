"""`build_notebooks.py html DIR` pages, opened with the network cut off: every explorer shows
its summary and figure, and every stored figure is drawn."""
from __future__ import annotations

import pytest

import build_notebooks
from tests.browser.conftest import LESSONS, NOTEBOOKS
from tests.browser.pages import assert_shows_summary, expected_outputs, loaded_images, offline


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    directory = tmp_path_factory.mktemp("html")
    assert build_notebooks.main(["html", str(directory), *LESSONS]) == 0
    return directory


@pytest.mark.parametrize("lesson", LESSONS)
def test_offline_html_export_shows_every_explorer(lesson, exported, page):
    expected = expected_outputs(NOTEBOOKS / f"{lesson}.ipynb")
    refused = offline(page)
    page.goto((exported / f"{lesson}.html").as_uri())
    statics = page.locator(".ipu-explorer-static")
    assert statics.count() == len(expected["explorers"]) > 0
    pictures = loaded_images(page, ".ipu-explorer-static img")
    assert [p["natural_width"] > 0 and p["visible"] for p in pictures] == [True] * len(pictures)
    for index, summary in enumerate(expected["explorers"]):
        assert_shows_summary(statics.nth(index), summary)
    figures = loaded_images(page, ".jp-OutputArea-output img:not(.ipu-explorer-static img)")
    assert len(figures) == expected["figures"]
    assert all(f["natural_width"] > 0 for f in figures)
    assert "Error displaying widget" not in page.inner_text("body")
    # Widget views would need a widget manager from a CDN: the export holds none.
    assert not any("jupyter-widgets" in url or "unpkg" in url for url in refused), refused
