"""The course website's sources: every page is in the nav, and links written for GitHub are
rewritten to the site's pages (docs/_site/hooks.py). tests/browser/test_website.py builds it."""
import importlib.util
import re
from pathlib import Path

import nbformat
import pytest
import yaml

pytest.importorskip("mkdocs", reason="the website needs the docs extra: pip install -e '.[docs]'")

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def load_hooks():
    spec = importlib.util.spec_from_file_location("site_hooks", DOCS / "_site" / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hooks = load_hooks()


def nav_pages(entries) -> list[str]:
    """Every page named in a MkDocs nav, however deep."""
    pages = []
    for entry in entries:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        pages += nav_pages(value) if isinstance(value, list) else [value]
    return pages


def nav() -> list[str]:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    return nav_pages(config["nav"])


def test_every_docs_page_is_in_the_nav():
    pages = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")
                   if "_site" not in p.parts)
    missing = [page for page in pages if page not in nav()]
    assert not missing, "\n".join(f"docs/{page} is not in mkdocs.yml's nav: add a line for it "
                                  f"(e.g. `      - Title: {page}`)" for page in missing)


def test_every_lesson_is_in_the_nav_and_every_nav_entry_exists():
    lessons = sorted(f"lessons/{p.name}" for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert [p for p in nav() if p.startswith("lessons/")] == lessons
    generated = {"index.md", *lessons}
    assert [p for p in nav() if p not in generated and not (DOCS / p).is_file()] == []


@pytest.mark.parametrize("page, link, expected", [
    ("course.md", "../notebooks/04_pipelining.ipynb", "lessons/04_pipelining.ipynb"),
    ("course.md", "../notebooks/04_pipelining.ipynb#exercises", "lessons/04_pipelining.ipynb#exercises"),
    ("index.md", "docs/course.md", "course.md"),
    ("index.md", "notebooks/01_poptorch_basics.ipynb", "lessons/01_poptorch_basics.ipynb"),
    ("index.md", "static/04_pipelining_0.png", "static/04_pipelining_0.png"),
    ("course.md", "../README.md", "index.md"),
    ("course.md", "differences.md#options", "differences.md#options"),
    ("reference/poptorch.md", "../course.md", "../course.md"),
    ("reference/poptorch.md", "../../notebooks/05_sharding.ipynb", "../lessons/05_sharding.ipynb"),
    ("course.md", "https://docs.graphcore.ai/", "https://docs.graphcore.ai/"),
    ("course.md", "#the-course", "#the-course"),
    ("course.md", "../no/such/file.md", "../no/such/file.md"),  # left broken: the build says so
    # a lesson page is HTML from the notebook: its links name the built pages
    ("lessons/04_pipelining.ipynb", "../docs/coming-from-gpus.md#pipeline-parallelism",
     "../coming-from-gpus.html#pipeline-parallelism"),
    ("lessons/04_pipelining.ipynb", "05_sharding.ipynb", "05_sharding.html"),
    ("lessons/04_pipelining.ipynb", "../static/diagram_pipeline.png", "../static/diagram_pipeline.png"),
])
def test_links_written_for_github_name_the_sites_pages(page, link, expected):
    assert hooks.rewrite_link(link, page) == expected


def test_a_link_to_a_source_file_shows_its_path():
    text = "see [the rules](../ipu_tutorials/simulator/rules.py) and ![a](../static/x.png)"
    assert hooks.rewrite_links(text, "architecture.md") == \
        "see the rules (`ipu_tutorials/simulator/rules.py`) and ![a](static/x.png)"


def test_a_lesson_page_shows_explorers_as_their_pictures(tmp_path):
    source = ROOT / "notebooks" / "04_pipelining.ipynb"
    copy = nbformat.read(hooks.lesson_copy(source, tmp_path), as_version=4)
    stored = nbformat.read(source, as_version=4)
    assert "widgets" in stored.metadata and "widgets" not in copy.metadata
    assert [c.source if c.cell_type == "code" else hooks.rewrite_links(c.source, "lessons/04_pipelining.ipynb")
            for c in stored.cells] == [c.source for c in copy.cells]
    outputs = [o for c in copy.cells for o in c.get("outputs", [])]
    assert not any(hooks.build_notebooks.WIDGET_VIEW in o.get("data", {}) for o in outputs)
    assert any("ipu-explorer-static" in o.get("data", {}).get("text/html", "") for o in outputs)


def test_a_lessons_contents_take_the_ids_its_headings_have():
    from types import SimpleNamespace

    from mkdocs.structure.toc import AnchorLink

    title = AnchorLink("Lesson 1", "lesson-1", 1)
    title.children = [AnchorLink("", "_1", 2), AnchorLink("The loss inside", "the-loss-inside", 2)]
    page = SimpleNamespace(file=SimpleNamespace(src_uri="lessons/01.ipynb"), toc=[title])
    html = ('<h1 id="lesson-1">Lesson 1</h1><h2 id="isrunningonipu"><code>isRunningOnIpu</code>'
            '</h2><h2 id="the-loss-inside-forward">The loss inside <code>forward</code></h2>')
    assert hooks.on_page_content(html, page, None, None) == html
    assert [e.id for e in hooks.toc_items(page.toc)] == [
        "lesson-1", "isrunningonipu", "the-loss-inside-forward"]


def test_every_link_from_a_page_to_a_lessons_heading_finds_it():
    """`../notebooks/NN.ipynb#heading` links (the GPU bridge's to lesson 16's cells) name a
    heading the lesson page has: its text lower-cased, as the site's heading ids are."""
    from markdown.extensions.toc import slugify

    for page in sorted(DOCS.glob("*.md")):
        for name, fragment in re.findall(r"\.\./notebooks/(\w+)\.ipynb#([\w-]+)", page.read_text()):
            lesson = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
            headings = [slugify(line.lstrip("#").strip(), "-") for cell in lesson.cells
                        if cell.cell_type == "markdown" for line in cell.source.splitlines()
                        if line.startswith("#")]
            assert fragment in headings, f"docs/{page.name}: {name}.ipynb has no heading #{fragment}"
