"""The course website, built with `mkdocs build --strict` and opened from disk in Chromium with
the network cut off: every lesson page shows its figures and explorer pictures, and no
internal link on any page is broken."""
from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from tests.browser.conftest import LESSONS, NOTEBOOKS, ROOT
from tests.browser.pages import assert_shows_summary, expected_outputs, loaded_images, offline

pytest.importorskip("mkdocs", reason="the website needs the docs extra: pip install -e '.[docs]'")
BUILD_SECONDS = 900  # a loaded 2-core machine; about 15 s of CPU
LINKS = "() => [...document.querySelectorAll('a[href]')].map(a => a.href)"


@pytest.fixture(scope="module")
def site(chromium_path, tmp_path_factory) -> Path:
    """The site as `mkdocs build --strict` writes it; a warning (a page missing from the nav,
    a link to a missing page or anchor) fails the build, and its log says which."""
    site_dir = tmp_path_factory.mktemp("site")
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
                             "--site-dir", str(site_dir)], cwd=ROOT, capture_output=True,
                            text=True, timeout=BUILD_SECONDS, env={**_environment(),
                                                                   "NO_MKDOCS_2_WARNING": "1"})
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stderr[-4000:]}"
    return site_dir


def _environment() -> dict:
    import os

    return dict(os.environ)


def site_pages(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("*.html") if p.name != "404.html")


def anchors(page: Path) -> set[str]:
    return {html.unescape(m) for m in re.findall(r'\bid="([^"]+)"', page.read_text("utf-8"))}


def broken(href: str, site: Path) -> str | None:
    """Why an internal link is broken (None when it is not, or leaves the site)."""
    parts = urlsplit(href)
    if parts.scheme != "file":
        return None
    target = Path(unquote(parts.path))
    if target.is_dir():
        target = target / "index.html"
    if not target.is_file() or site not in target.parents:
        return "no such file in the site"
    if parts.fragment and target.suffix == ".html" and unquote(parts.fragment) not in anchors(target):
        return f"no anchor #{parts.fragment} in {target.relative_to(site)}"
    return None


@pytest.mark.parametrize("lesson", LESSONS)
def test_a_lesson_page_shows_every_figure_and_explorer_picture(lesson, site, page):
    expected = expected_outputs(NOTEBOOKS / f"{lesson}.ipynb")
    refused = offline(page)
    page.goto((site / "lessons" / f"{lesson}.html").as_uri())
    statics = page.locator(".ipu-explorer-static")
    assert statics.count() == len(expected["explorers"]) > 0
    for index, summary in enumerate(expected["explorers"]):
        assert_shows_summary(statics.nth(index), summary)
    pictures = loaded_images(page, "article img")
    assert len(pictures) == expected["figures"] + len(expected["explorers"]) + expected["diagrams"]
    assert all(p["natural_width"] > 0 and p["visible"] for p in pictures), pictures
    assert "Error displaying widget" not in page.inner_text("body")
    assert refused == [], "the page asked the network for " + ", ".join(refused)


def test_no_internal_link_is_broken(site, page):
    refused = offline(page)
    problems = []
    for path in site_pages(site):
        page.goto(path.as_uri())
        for href in sorted(set(page.evaluate(LINKS))):
            reason = broken(href, site)
            if reason:
                problems.append(f"{path.relative_to(site)} -> {href}: {reason}")
    assert not problems, "broken links in the built site:\n" + "\n".join(problems)
    assert refused == [], "pages asked the network for " + ", ".join(sorted(set(refused)))


def test_every_picture_on_every_page_loads(site, page):
    offline(page)
    empty = []
    for path in site_pages(site):
        page.goto(path.as_uri())
        empty += [f"{path.relative_to(site)}: {src}" for src in page.evaluate(
            "() => [...document.images].filter(i => i.complete && !i.naturalWidth)"
            ".map(i => i.src.slice(0, 80))")]
    assert not empty, "pictures that do not load:\n" + "\n".join(empty)


def test_the_link_check_finds_a_broken_link(site, tmp_path):
    page = site / "course.html"
    assert broken(page.as_uri(), site) is None
    assert broken((site / "nowhere.html").as_uri(), site) == "no such file in the site"
    assert broken(page.as_uri() + "#no-such-anchor", site) == \
        "no anchor #no-such-anchor in course.html"
    assert broken("https://example.org/", site) is None
