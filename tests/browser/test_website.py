"""The course website, built as docs/website.md says and opened in Chromium with the network cut
off: every lesson page shows its figures and explorer pictures and folds its solutions away,
lists and contents render as written, printed tables keep their columns, search finds from disk
and when served and puts the lesson that teaches a name first, the 404 page is styled from
disk, and the page's size figures are the site's. Every page at both widths (accessible,
outputs and code read whole, pictures loading, links whole) is test_website_axe.py, which
visits each once."""
from __future__ import annotations

import html
import json
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import pytest

from ipu_tutorials.course.editions import exercises_of
from tests.browser.conftest import LESSONS, NOTEBOOKS, ROOT
from tests.browser.pages import assert_shows_summary, expected_outputs, loaded_images, offline
from tests.browser.site_build import WEBSITE_PAGE, site_sizes

pytest.importorskip("mkdocs", reason="the website needs the docs extra: pip install -e '.[docs]'")
LINKS = "() => [...document.querySelectorAll('a[href]')].map(a => a.href)"
PHONE = {"width": 390, "height": 844}
LIST_ITEM = re.compile(r"^ {0,3}([-*+]|\d+[.)]) \S")
RUN_ON_ITEM = re.compile(r"\n\s*([-*+]|\d+[.)]) \S")  # a list item's line inside a paragraph
# docs/website.md's size figures, each read from the page by the pattern before it.
SIZE_FIGURES = {"total": r"It writes `site/`: ([\d.]+) MB", "files": r"MB in (\d+) files",
                "lesson pages": r"lesson pages are ([\d.]+) MB",
                "figures": r"from `static/` \(([\d.]+) MB",
                "notebooks": r"download are ([\d.]+) MB",
                "search index": r"search index ([\d.]+) MB",
                "scripts and styles": r"scripts and styles ([\d.]+) MB"}


def site_pages(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


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
    """The lines of the lesson's solutions (its exercises' modules hold them) that appear
    nowhere else in it (an exercise's starting code, printed by the lesson, shares some)."""
    nb = nbformat.read(NOTEBOOKS / f"{lesson}.ipynb", as_version=4)
    elsewhere = "\n".join(c.source for c in nb.cells) + json.dumps(
        [c.get("outputs", []) for c in nb.cells])
    return [line.strip() for g in exercises_of(nb) for line in g.exercise.solution_code.splitlines()
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
def test_solutions_are_folded_closed_and_never_searched(lesson, site, page):
    # was wrong: no solution on the site, while its page said each was folded under its check
    hidden = solution_lines(lesson)
    exercises = exercises_of(nbformat.read(NOTEBOOKS / f"{lesson}.ipynb", as_version=4))
    page.goto((site / "lessons" / f"{lesson}.html").as_uri())
    folds = page.locator("details.ipu-solution")
    assert folds.count() == len(exercises) > 0
    assert folds.evaluate_all("ds => ds.filter(d => d.open).length") == 0
    shown = page.inner_text("article")  # what is rendered: a closed <details> is not
    assert [line for line in hidden if line in shown] == []
    folded = "\n".join(folds.all_text_contents())
    assert [line for line in hidden if line not in folded] == []
    index = search_index(site, f"lessons/{lesson}.html")
    indexed = [line for line in hidden if json.dumps(html.escape(line, quote=False))[1:-1] in index]
    assert indexed == []
    folds.first.locator("summary").click()
    code = exercises[0].exercise.solution_code.splitlines()[0].strip()
    assert code in folds.first.inner_text()


def test_the_search_index_holds_no_copy_buttons_solutions_or_pilcrows(site):
    # was wrong: 77 "BEGIN SOLUTION" blocks, 266 "Copied!" strings, and a "¶" ending every
    # lesson section's title
    lessons = search_index(site, "lessons/")
    assert "BEGIN SOLUTION" not in lessons and "Correct!" not in lessons
    assert "Copied!" not in search_index(site)
    docs = json.loads((site / "search" / "search_index.json").read_text("utf-8"))["docs"]
    assert [d["title"] for d in docs if "¶" in d["title"]] == []


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


@pytest.mark.parametrize("lesson", ["03_blocks_and_stages", "15_capstone_pod16"])
def test_printed_tables_keep_their_columns_on_a_phone(lesson, site, page):
    # was wrong: a table printed by a cell wrapped into a jumble on a phone; then every output
    # line stayed on one line, its prose cut off at the column
    page.set_viewport_size(PHONE)
    page.goto((site / "lessons" / f"{lesson}.html").as_uri())
    rows = page.locator(".jp-OutputArea-output pre .ipu-columns")
    lines = rows.evaluate_all("rs => rs.map(r => new Set([...r.getClientRects()]"
                              ".map(b => Math.round(b.top))).size)")
    assert lines and set(lines) == {1}  # each row on one line
    blocks = page.locator(".jp-OutputArea-output pre:has(.ipu-columns)")
    styles = blocks.evaluate_all("ps => ps.map(p => [p.tabIndex, p.scrollWidth > p.clientWidth])")
    assert any(scrolls for _, scrolls in styles)  # a wide table scrolls instead
    assert all(tab == 0 for tab, scrolls in styles if scrolls)  # and takes the keyboard


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
    assert ((site / "lessons" / "04_pipelining.ipynb").read_bytes() ==
            (NOTEBOOKS / "04_pipelining.ipynb").read_bytes())
    owner_repo = repository.removeprefix("https://github.com/")
    assert (f"colab.research.google.com/github/{owner_repo}/blob/main/notebooks/04_pipelining.ipynb"
            in links[1] and f"mybinder.org/v2/gh/{owner_repo}/" in links[2])
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
    """The addresses of the results Material's search shows for query, best first. Material
    searches again on a key's release, not on a changed value alone: the query is typed, then
    a key pressed; the last query's results are cleared first, so that none is read as this
    one's."""
    search = page.locator(".md-search__input")
    if not search.is_visible():  # a phone: the header's magnifier opens it
        page.locator("label.md-header__button[for='__search']").click()
    results = page.locator(".md-search-result__item")
    if results.count():
        search.fill("")
        search.press("End")
        results.first.wait_for(state="detached", timeout=30_000)
    search.fill(query)
    search.press("End")
    results.first.wait_for(timeout=30_000)
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
    assert (broken(page.as_uri() + "#no-such-anchor", site) ==
            "no anchor #no-such-anchor in course.html")
    assert broken("https://example.org/", site) is None


def test_search_puts_the_lesson_that_teaches_a_name_first(site, page):
    # was wrong: the reference came first for most names, and lesson 4 tenth of twelve for
    # "gradientAccumulation", the name it teaches; each lesson section's title ended in "¶"
    from tests.test_website_lessons import lesson_search

    teacher = {name: lesson for lesson, names in lesson_search.TAUGHT.items() for name in names}
    assert teacher["gradientAccumulation"] == "04"
    refused = offline(page)
    page.goto((site / "index.html").as_uri())
    first = {name: search_results(page, name)[0] for name in teacher}
    assert {name: url for name, url in first.items()
            if f"/lessons/{teacher[name]}_" not in url} == {}
    assert "¶" not in page.inner_text(".md-search-result")
    assert refused == []


def test_the_404_page_is_styled_and_linked_from_disk(site, page):
    # was wrong: opened from disk, it showed unstyled, every link and style sheet at "/"
    refused = offline(page)
    page.goto((site / "404.html").as_uri())
    assert page.evaluate("() => getComputedStyle(document.querySelector('.md-header'))"
                         ".position") == "sticky"  # Material's style sheet applies
    links = [href for href in page.evaluate(LINKS) if href.startswith("file:")]
    assert links and [href for href in links if broken(href, site)] == []
    assert refused == []


@pytest.mark.parametrize("reference",
                         sorted(p.stem for p in (ROOT / "docs" / "reference").glob("*.md")))
def test_no_reference_paragraph_runs_a_list_into_its_text(reference, site):
    # was wrong: two docstrings' lists rendered as paragraphs with " - " inside
    from bs4 import BeautifulSoup

    soup = BeautifulSoup((site / "reference" / f"{reference}.html").read_text("utf-8"),
                         "html.parser")
    run_on = [p.get_text()[:80] for p in soup.select("article p")
              if RUN_ON_ITEM.search(p.get_text())]
    assert run_on == [], "leave a blank line before the list in the docstring"


def test_the_website_page_states_the_sites_size(site):
    # was wrong: the page said 12.4 MB, the build wrote 15.2 MB
    text = WEBSITE_PAGE.read_text(encoding="utf-8")
    stated = {name: float(re.search(pattern, text).group(1))
              for name, pattern in SIZE_FIGURES.items()}
    measured = site_sizes(site)
    off = {name: f"{stated[name]} said, {measured[name]:.1f} measured" for name in stated
           if abs(stated[name] - measured[name]) > 0.1 * measured[name]}
    assert off == {}, "update docs/website.md's figures"
