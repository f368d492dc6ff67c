"""The course website, built as docs/website.md says and opened in Chromium with the network cut
off: every lesson page shows its figures and explorer pictures and hides its solutions, lists
and contents render as written, outputs keep their columns, search finds from disk and when
served. Every page at both widths (accessible, code fitting its column, pictures loading,
links whole) is test_website_axe.py, which visits each once."""
from __future__ import annotations

import html
import json
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import pytest

from tests.browser.conftest import LESSONS, NOTEBOOKS, ROOT
from tests.browser.pages import assert_shows_summary, expected_outputs, loaded_images, offline

pytest.importorskip("mkdocs", reason="the website needs the docs extra: pip install -e '.[docs]'")
LINKS = "() => [...document.querySelectorAll('a[href]')].map(a => a.href)"
PHONE = {"width": 390, "height": 844}
SOLUTION = re.compile(r"^[ \t]*### BEGIN SOLUTION[^\n]*\n(.*?)^[ \t]*### END SOLUTION", re.M | re.S)
LIST_ITEM = re.compile(r"^ {0,3}([-*+]|\d+[.)]) \S")


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


def solution_lines(lesson: str) -> list[str]:
    """The lines of the lesson's solutions that appear nowhere else in it (an exercise's
    starting code, printed by the lesson, shares some)."""
    cells = nbformat.read(NOTEBOOKS / f"{lesson}.ipynb", as_version=4).cells
    regions = [m for c in cells for m in SOLUTION.findall(c.source)]
    elsewhere = "\n".join(SOLUTION.sub("", c.source) for c in cells) + json.dumps(
        [c.get("outputs", []) for c in cells if not SOLUTION.search(c.source)])
    return [line.strip() for region in regions for line in region.splitlines()
            if len(line.strip()) > 8 and not line.strip().startswith("#")
            and line.strip() not in elsewhere]


def search_index(site: Path, page: str = "") -> str:
    """The search index's entries for the pages whose address starts with `page`."""
    docs = json.loads((site / "search" / "search_index.json").read_text("utf-8"))["docs"]
    return json.dumps([d for d in docs if d["location"].startswith(page)])


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
    alts = page.eval_on_selector_all("article img", "images => images.map(i => i.alt)")
    assert all(len(alt.split()) >= 12 for alt in alts), alts  # a sentence, not a name
    assert "Error displaying widget" not in page.inner_text("body")
    assert refused == [], "the page asked the network for " + ", ".join(refused)


@pytest.mark.parametrize("lesson", LESSONS)
def test_no_solution_is_shown_or_searchable(lesson, site, page):
    # was wrong: every solution was printed under its exercise, and the search index held them
    hidden = solution_lines(lesson)
    page.goto((site / "lessons" / f"{lesson}.html").as_uri())
    shown = page.inner_text("article")  # what is rendered: a closed <details> is not
    assert "BEGIN SOLUTION" not in shown and "Correct!" not in shown
    assert [line for line in hidden if line in shown] == []
    index = search_index(site, f"lessons/{lesson}.html")
    assert [line for line in hidden if json.dumps(line)[1:-1] in index] == []
    folds = page.locator("details.ipu-solution")
    if hidden:  # the solutions are there, folded: opening one shows it
        folds.first.locator("summary").click()
        assert "BEGIN SOLUTION" in folds.first.inner_text()


def test_the_search_index_holds_no_copy_buttons_or_solutions(site):
    # was wrong: 77 "BEGIN SOLUTION" blocks and 266 "Copied!" strings
    lessons = search_index(site, "lessons/")
    assert "BEGIN SOLUTION" not in lessons and "Correct!" not in lessons
    assert "Copied!" not in search_index(site)


def markdown_list_items(source: str) -> int:
    """How many list items a Markdown text has outside its code blocks."""
    fenced, count = False, 0
    for line in source.splitlines():
        fenced ^= bool(re.match(r"\s*(```|~~~)", line))
        count += bool(not fenced and LIST_ITEM.match(line))
    return count


@pytest.mark.parametrize("source", ["README.md", *sorted(
    p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))])
def test_every_list_renders_as_a_list(source, site, page):
    # was wrong: lists under a paragraph line ran into it, with a literal " - " (docs/course.md)
    name = "index.html" if source == "README.md" else Path(source).with_suffix(".html").name
    page.goto((site / name).as_uri())
    items = page.locator("article li").count()
    assert items >= markdown_list_items((ROOT / source).read_text(encoding="utf-8"))
    run_on = page.eval_on_selector_all(
        "article p", "ps => ps.map(p => p.textContent).filter(t => /\\n\\s*[-*] \\S/.test(t))")
    assert run_on == []


@pytest.mark.parametrize("lesson", LESSONS)
def test_a_lessons_contents_name_every_heading(lesson, site, page):
    # was wrong: lessons 1 and 13 had blank and missing entries; lesson 14's were empty
    page.goto((site / "lessons" / f"{lesson}.html").as_uri())
    entries = page.eval_on_selector_all(
        ".md-sidebar--secondary nav.md-nav--secondary a.md-nav__link",
        "links => links.map(a => [a.textContent.trim(), a.getAttribute('href')])")
    headings = page.eval_on_selector_all(
        "article :is(h2, h3, h4)[id]", "hs => hs.map(h => ['#' + h.id, h.textContent])")
    assert entries and all(text for text, _ in entries), entries
    assert [href for _, href in entries] == [href for href, _ in headings]
    assert page.locator("article h1").count() == 1


def test_outputs_keep_their_columns_on_a_phone(site, page):
    # was wrong: a table printed by a cell wrapped into a jumble on a phone
    page.set_viewport_size(PHONE)
    page.goto((site / "lessons" / "03_blocks_and_stages.html").as_uri())
    outputs = page.locator(".jp-OutputArea-output pre")
    styles = outputs.evaluate_all("ps => ps.map(p => [getComputedStyle(p).whiteSpace, p.tabIndex,"
                                  " p.scrollWidth > p.clientWidth])")
    assert styles and all(white == "pre" and tab == 0 for white, tab, _ in styles)
    assert any(scrolls for _, _, scrolls in styles)  # a wide table scrolls instead


def test_a_figure_opens_full_size(site, page):
    page.goto((site / "lessons" / "04_pipelining.html").as_uri())
    figure = page.locator("article .jp-OutputArea-output img").first
    natural = figure.evaluate("img => img.naturalWidth")
    figure.click()
    shown = page.locator(".glightbox-container .gslide.current img")
    shown.wait_for()
    assert shown.evaluate("img => img.naturalWidth") == natural


def test_a_lesson_offers_its_notebook_colab_binder_and_the_next_lesson(site, page):
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    repository = re.search(r'^Repository = "([^"]+)"', pyproject, re.M).group(1)
    page.goto((site / "lessons" / "04_pipelining.html").as_uri())
    links = page.eval_on_selector_all(".ipu-notebook-links a", "as => as.map(a => a.href)")
    assert links[0] == (site / "lessons" / "04_pipelining.ipynb").as_uri()
    assert (site / "lessons" / "04_pipelining.ipynb").read_bytes() == \
        (NOTEBOOKS / "04_pipelining.ipynb").read_bytes()
    owner_repo = repository.removeprefix("https://github.com/")
    assert f"colab.research.google.com/github/{owner_repo}/blob/main/notebooks/04_pipelining.ipynb" \
        in links[1] and f"mybinder.org/v2/gh/{owner_repo}/" in links[2]
    assert page.locator(".md-header a.md-source").get_attribute("href") == repository
    assert page.locator("a.md-footer__link--next").get_attribute("href") == "05_sharding.html"
    assert page.locator("a.md-footer__link--prev").get_attribute("href") == "03_blocks_and_stages.html"


def test_dark_mode_is_one_click_away(site, page):
    page.goto((site / "index.html").as_uri())
    before = page.evaluate("() => document.body.dataset.mdColorScheme")
    try:
        page.locator("form[data-md-component='palette'] label:visible").first.click()
        after = page.evaluate("() => document.body.dataset.mdColorScheme")
        assert {before, after} == {"default", "slate"}
    finally:  # the choice is remembered for every page: forget it for the other tests
        page.evaluate("() => localStorage.clear()")


def search_results(page, query: str) -> list[str]:
    search = page.locator(".md-search__input")
    if not search.is_visible():  # a phone: the header's magnifier opens it
        page.locator("label.md-header__button[for='__search']").click()
    search.fill(query)
    page.locator(".md-search-result__item").first.wait_for(timeout=30_000)
    return page.eval_on_selector_all(".md-search-result__item > a", "as => as.map(a => a.href)")


@pytest.mark.parametrize("where", ["disk", "served"])
def test_search_finds_the_pipelining_lesson_first(where, site, served_site, page):
    refused = offline(page) if where == "disk" else []
    page.goto((site / "index.html").as_uri() if where == "disk" else f"{served_site}/index.html")
    results = search_results(page, "pipelining")
    assert "lessons/04_pipelining.html" in results[0], results[:3]
    assert refused == []


def test_the_link_check_finds_a_broken_link(site, tmp_path):
    page = site / "course.html"
    assert broken(page.as_uri(), site) is None
    assert broken((site / "nowhere.html").as_uri(), site) == "no such file in the site"
    assert broken(page.as_uri() + "#no-such-anchor", site) == \
        "no anchor #no-such-anchor in course.html"
    assert broken("https://example.org/", site) is None
