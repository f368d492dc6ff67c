"""A lesson page of the course website, finished by docs/_site/: solutions folded from the
exercises' modules (or left out for a class site), printed rows of columns marked, figures
captioned without naming an answer, the form the search index reads, the names each lesson
teaches, and the 404 page's links. tests/browser/test_website*.py look at the built pages."""
import re
from types import SimpleNamespace

import nbformat
import pytest

from ipu_tutorials.classroom.exercises import pipelining
from tests.test_website import ROOT, exercise_notebook, hooks, lesson_pages, site_config

pytest.importorskip("mkdocs", reason="the website needs the docs extra: pip install -e '.[docs]'")
import lesson_outputs  # noqa: E402  (docs/_site/, on the path once the hooks are loaded)
import lesson_search  # noqa: E402
import lesson_solutions  # noqa: E402

BeautifulSoup = lesson_pages.BeautifulSoup


def learner_notebook() -> nbformat.NotebookNode:
    """A lesson as notebooks/ stores it: the exercises imported, an answer cell with starting
    code, and its check."""
    cells = [nbformat.v4.new_code_cell(
                 "from ipu_tutorials.classroom.exercises import pipelining as exercises"),
             nbformat.v4.new_markdown_cell("### Exercise 4.1: the smallest accumulation"),
             nbformat.v4.new_code_cell("my_accumulation = ...  # your answer"),
             nbformat.v4.new_code_cell("exercises.smallest_accumulation.check(my_accumulation)"),
             nbformat.v4.new_code_cell("print('after')")]
    cells[2].metadata["tags"] = ["answer"]
    for index, cell in enumerate(cells):
        cell.id = f"c{index}"
    return nbformat.v4.new_notebook(cells=cells)


def page_of(nb: nbformat.NotebookNode, solutions: bool = True) -> BeautifulSoup:
    html = "".join(f'<div class="jp-Cell jp-CodeCell"><div class="jp-Cell" id="cell-id={c.id}">'
                   f"{c.source}</div></div>" for c in nb.cells)
    page, _, _ = lesson_pages.finish(f"<h1 id='t'>T</h1>{html}", nb, "04_x", None, solutions)
    return BeautifulSoup(page, "html.parser")


def test_each_exercise_has_its_solution_folded_under_its_check():
    # was wrong: the site showed only the starting code's "Not yet", and no solution
    soup = page_of(learner_notebook())
    (fold,) = soup.select("details.ipu-solution[data-search-exclude]")
    assert "open" not in fold.attrs
    assert fold.summary.get_text() == "Solution to exercise 4.1 (try it yourself first)"
    assert fold.find("code", string="exercises.smallest_accumulation.solution()") is not None
    assert (fold.select_one(".highlight code").get_text().strip() ==
            pipelining.smallest_accumulation.solution_code)
    check = fold.find_previous_sibling()
    assert "check(my_accumulation)" in check.get_text() and "after" not in fold.get_text()
    assert "Correct" not in fold.get_text()  # no verdict is shown: nothing was run


def test_a_class_site_has_no_solutions_and_refuses_an_answered_notebook():
    assert page_of(learner_notebook(), solutions=False).select("details") == []
    answered = exercise_notebook("### BEGIN SOLUTION\nmy_answer = 7\n### END SOLUTION\n")
    with pytest.raises(ValueError, match="04_x: the notebook holds solutions"):
        page_of(answered, solutions=False)


def test_the_solutions_switch_is_read_from_the_environment(monkeypatch):
    assert site_config()["extra"]["solutions"] is True
    monkeypatch.setenv("IPU_SITE_SOLUTIONS", "false")
    config = SimpleNamespace(extra=site_config()["extra"])
    assert hooks.shows_solutions(config) is False
    with pytest.raises(hooks.ConfigurationError, match="must be true or false.*'maybe'"):
        hooks.shows_solutions(SimpleNamespace(extra={"solutions": "maybe"}))


@pytest.mark.parametrize("line, columns", [
    ("IPU      code   weights  gradients", True),
    ("  0  22.0 MiB  74.7 MiB   74.7 MiB", True),
    ("Graph compilation: 100%|██████████| 100/100", True),
    ("out of memory; fullest IPU 3: 1,011.3 MiB of 897.0 MiB", False),
    ("   All: logits (32, 10), loss (8,), 1,312 bytes back", False),
    ("", False),
])
def test_a_row_of_columns_is_told_from_prose(line, columns):
    assert lesson_outputs.is_columns(line) is columns


def test_only_the_rows_of_columns_keep_their_line():
    # was wrong: every output line stayed on one line, prose cut off at the column
    text = "IPU  code   weights\n  0  1 MiB  2 MiB\nout of memory; fullest IPU 0\n"
    soup = BeautifulSoup(f'<div class="jp-OutputArea-output"><pre>{text}</pre></div>'
                         f'<div class="jp-OutputArea-output"><pre>just a sentence here</pre>'
                         f'</div>', "html.parser")
    lesson_outputs.mark_columns(soup)
    table, prose = soup.select("pre")
    assert [s.get_text() for s in table.select(".ipu-columns")] == text.splitlines()[:2]
    assert table.get_text() == text and prose.find(True) is None


@pytest.mark.parametrize("alt, expected", [
    ("Two charts over device iterations 1 to 64 at batch 16. Left: bars.", "Two charts over "
     "device iterations 1 to 64 at batch 16"),
    ("Placement diagram: four boxes, IPU 0 to IPU 3, holding blocks: more.",
     "Placement diagram: four boxes, IPU 0 to IPU 3, holding blocks"),
    ("Left: memory on IPUs 0 to 3, zoomed in: almost all code.", "Left: memory on IPUs 0 to 3, "
     "zoomed in"),
    ("A bar of 0.37B parameters in float16.", "A bar of 0.37B parameters in float16"),
])
def test_a_caption_is_the_alt_texts_first_clause_of_four_words(alt, expected):
    assert lesson_outputs.headline(alt) == expected


def test_a_caption_never_names_an_exercises_answer():
    answers = lesson_solutions.answer_words(
        "strategy = x.setTensorsLiveness(poptorch.Liveness.OffChipAfterFwdNoOverlap)\n"
        "my_bytes = 2 * 4 * n  # 655,360: layer3's weight alone\nmy_choice = 'b'")
    assert {"OffChipAfterFwdNoOverlap", "655360"} <= answers and "b" not in answers
    assert lesson_outputs.caption("6.2", "Timeline under Liveness.OffChipAfterFwdNoOverlap: "
                                  "streams.", answers) == "Figure 6.2"
    assert lesson_outputs.caption("16.1", "Rank 0 holds 655,360 bytes of the state: more.",
                                  answers) == "Figure 16.1"
    assert lesson_outputs.caption("4.1", "Timeline of one pipelined training step: more.",
                                  answers) == "Figure 4.1: Timeline of one pipelined training step"


def test_every_figure_is_captioned_in_a_figure():
    alt = "Timeline of one pipelined step on four IPUs: the staircase."
    soup = BeautifulSoup(
        f'<div class="jp-OutputArea-output"><a class="glightbox"><img alt="{alt}" src="a.png">'
        f'</a></div><div class="jp-RenderedMarkdown"><p><img alt="{alt}" src="b.png"></p></div>'
        f'<div class="ipu-explorer-static"><img alt="explorer" src="c.png"></div>',
        "html.parser")
    lesson_outputs.add_captions(soup, "4", set())
    assert [f.figcaption.get_text() for f in soup.select("figure")] == [
        f"Figure 4.{n}: Timeline of one pipelined step on four IPUs" for n in (1, 2)]
    assert soup.p is None  # the Markdown image's paragraph became its figure
    assert soup.select("figure > a.glightbox > img") and soup.select("figure > img")
    assert soup.select_one(".ipu-explorer-static img").find_parent("figure") is None


def test_the_search_index_reads_each_section_with_its_cells():
    # was wrong: the code and outputs under a heading went to an untitled first section, and
    # every lesson's section title ended in "¶"
    page = ('<script>x</script><div class="jupyter-wrapper"><div class="jp-Cell"><h1 id="t">T'
            '<a class="anchor-link">¶</a></h1></div><div class="jp-Cell"><h2 id="s">S'
            '<a class="anchor-link">¶</a></h2><p>prose</p></div><div class="jp-Cell"><pre>code'
            '</pre><clipboard-copy>Copied!</clipboard-copy><div class="clipboard-copy-txt">code'
            '</div></div><details data-search-exclude=""><pre>solution</pre></details></div>')
    assert (lesson_search.for_search(page) ==
            '<h1 id="t">T</h1><h2 id="s">S</h2><p>prose</p><pre>code</pre>')


def test_each_name_a_lesson_teaches_is_in_that_lesson():
    lessons = {p.stem.split("_")[0]: p for p in (ROOT / "notebooks").glob("*.ipynb")}
    assert set(lesson_search.TAUGHT) <= set(lessons)
    for number, names in lesson_search.TAUGHT.items():
        text = "\n".join(c.source for c in nbformat.read(lessons[number], as_version=4).cells)
        missing = [name for name in names if not re.search(rf"\b{re.escape(name)}\b", text)]
        assert missing == [], f"lesson {number} no longer names {missing}: update lesson_search.py"
    taught = [name for names in lesson_search.TAUGHT.values() for name in names]
    assert len(taught) == len(set(taught)), "a name is taught by one lesson"


def test_the_404_page_links_work_from_disk_and_from_a_server():
    # was wrong: opened from disk, the 404 page had no style (its links began at "/")
    page = ('<html><head><link href="/assets/main.css"></head><body><a href="/course.html">'
            '</a><a href="//example.org/x"></a><script id="__config">{"base": "/", "search": '
            '"/assets/w.js"}</script><script src="/assets/b.js"></script></body></html>')
    fixed = hooks.not_found_page(page, None)
    assert 'href="assets/main.css"' in fixed and 'href="course.html"' in fixed
    assert 'src="assets/b.js"' in fixed and 'href="//example.org/x"' in fixed
    assert '"base": "."' in fixed and '"search": "assets/w.js"' in fixed
    assert 'base.href = "/"' in fixed and 'location.protocol !== "file:"' in fixed
    assert 'base.href = "/course/"' in hooks.not_found_page(page, "https://x.org/course/")
