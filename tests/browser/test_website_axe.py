"""Every page of the course website, 404 included, opened from disk as a reader does with the
network cut off, at desktop (1280x900) and phone (390x844) width, each visited once: axe-core's
accessibility rules find no critical and no serious violation (the search dialog included; in
dark mode too for a page of each kind), no output prose is cut off at its column, every block
that scrolls sideways shows its cue, no word of code is split, every figure has a caption,
every picture loads, nothing is asked of the network, and no internal link is broken."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.conftest import LESSONS, ROOT
from tests.browser.pages import offline
from tests.browser.test_website import LINKS, broken, site_pages
from tests.browser.test_website_reading import (captionless_figures, cut_off_prose,
                                                scrolling_without_cue, split_identifiers)

axe_playwright = pytest.importorskip(
    "axe_playwright_python.sync_playwright",
    reason="the accessibility tests need axe: pip install -e '.[browser]'")
pytest.importorskip("mkdocs", reason="the website needs the docs extra: pip install -e '.[docs]'")
VIEWPORTS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}
BLOCKING = ("critical", "serious")


def page_names() -> list[str]:
    """Every page the site has, by its source: the home page, docs/, the lessons and the 404
    page."""
    docs = sorted(p.relative_to(ROOT / "docs").with_suffix(".html").as_posix()
                  for p in (ROOT / "docs").rglob("*.md") if "_site" not in p.parts)
    return ["index.html", *docs, *(f"lessons/{lesson}.html" for lesson in LESSONS), "404.html"]


def blocking_violations(page) -> list[str]:
    """axe-core's critical and serious violations on the page, one line each."""
    # Only the violations are collected with their nodes: axe still runs every rule, but does
    # not gather the passing and incomplete results, which took half its time on a lesson page.
    results = axe_playwright.Axe().run(page, options={"resultTypes": ["violations"]}).response
    return [f"{v['id']} ({v['impact']}): {v['help']} at "
            + "; ".join(f"{n['target']}: {' '.join(n['failureSummary'].split())[:200]}"
                        for n in v["nodes"][:3])
            for v in results["violations"] if v["impact"] in BLOCKING]


@pytest.fixture(scope="module")
def axe_tab(browser_context):
    tab = browser_context.new_page()
    offline(tab)
    yield tab
    tab.close()


@pytest.fixture(scope="module")
def refused(axe_tab) -> list[str]:
    """What the pages asked the network for (refused), emptied by each test that reads it."""
    return offline(axe_tab)


def pictures_not_loaded(page) -> list[str]:
    return page.evaluate("() => [...document.images].filter(i => i.complete && !i.naturalWidth)"
                         ".map(i => i.src.slice(0, 80))")


def broken_links(page, site) -> list[str]:
    return [f"{href}: {reason}" for href in sorted(set(page.evaluate(LINKS)))
            if (reason := broken(href, site))]


def test_every_built_page_is_visited(site):
    assert sorted(p.relative_to(site).as_posix() for p in site_pages(site)) == sorted(page_names())


@pytest.mark.parametrize("width", VIEWPORTS)
@pytest.mark.parametrize("name", page_names())
def test_a_page_reads_whole_at_a_width(name, width, site, axe_tab, refused):
    # was: 2 to 5 serious axe rules on every page (contrast of code comments and the footer,
    # unfocusable scrolling regions, links told apart by colour alone, an unnamed search dialog,
    # empty contents links), and on the 404 page an unnamed search dialog; then 64 lines of
    # output prose cut off at 1280 px and 220 at 390, no scroll cue anywhere, code split
    # mid-name on a phone (436 words), 23 figures without a caption
    axe_tab.set_viewport_size(VIEWPORTS[width])
    refused.clear()
    axe_tab.goto((site / name).as_uri())
    assert blocking_violations(axe_tab) == []
    assert cut_off_prose(axe_tab) == []
    assert scrolling_without_cue(axe_tab) == []
    assert split_identifiers(axe_tab) == []
    assert captionless_figures(axe_tab) == []
    assert pictures_not_loaded(axe_tab) == []
    if width == "desktop":  # the links are the same at both widths
        assert broken_links(axe_tab, site) == []
    assert refused == [], "the page asked the network for " + ", ".join(refused)


@pytest.mark.parametrize("name", ["index.html", "course.html", "reference/poptorch.html",
                                  "lessons/03_blocks_and_stages.html", "lessons/04_pipelining.html"])
def test_dark_mode_has_no_serious_accessibility_violation(name, site, axe_tab):
    axe_tab.set_viewport_size(VIEWPORTS["desktop"])
    axe_tab.emulate_media(color_scheme="dark")
    try:  # a reader whose system prefers dark, on a first visit (Material remembers a scheme)
        axe_tab.goto((site / name).as_uri())
        axe_tab.evaluate("() => localStorage.clear()")
        axe_tab.reload()
        assert axe_tab.evaluate("() => document.body.dataset.mdColorScheme") == "slate"
        assert blocking_violations(axe_tab) == []
    finally:
        axe_tab.evaluate("() => localStorage.clear()")
        axe_tab.emulate_media(color_scheme="light")


def test_the_search_dialog_is_named(site, axe_tab):
    axe_tab.goto((site / "index.html").as_uri())
    assert axe_tab.locator(".md-search[role='dialog']").get_attribute("aria-label") == "Search"


def test_axe_finds_a_violation(tmp_path: Path, axe_tab):
    page = tmp_path / "bad.html"
    page.write_text('<html lang="en"><title>t</title><body><main><p style="color:#bbb">faint'
                    '</p><a href="x.html"></a></main></body></html>')
    axe_tab.goto(page.as_uri())
    found = {line.split(" ")[0] for line in blocking_violations(axe_tab)}
    assert {"color-contrast", "link-name"} <= found
