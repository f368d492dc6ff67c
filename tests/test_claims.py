"""The claims ledger (docs/claims.md): every claim id a lesson or page uses has a row, every row
is used where it says, and every source is one a learner can open."""
import glob
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LEDGER = os.path.join(ROOT, "docs", "claims.md")
# Where claims are made: the lessons' sources, the docs pages and the README (the site's home).
PLACES = sorted(glob.glob(os.path.join(ROOT, "walkthroughs", "*.py"))
                + [p for p in glob.glob(os.path.join(ROOT, "docs", "*.md")) if p != LEDGER]
                + [os.path.join(ROOT, "README.md")])
MARK = re.compile(r"(?:<!--\s*claim:\s*([\w.-]+)\s*-->|#\s*claim:\s*([\w.-]+))")
COLUMNS = ["id", "where", "claim", "source", "release", "simulator"]
# A public source: a web page, a repository at a release (owner/name@ref:path; a tag may hold
# slashes, as PopTorch's `sdk/poptorch/3.4.0`), or a paper.
PUBLIC_SOURCE = re.compile(r"https://\S+|\b[\w.-]+/[\w.-]+@[\w.+/-]+:\S+|arXiv:\d{4}\.\d{4,5}")
# Planning notes and machine paths are not sources a learner can open.
PRIVATE = re.compile(r"shared/|\bseeds?\b|/work/|\.\./|file://", re.I)
# Where a row may quote the difference it names: the differences page, and the integrations'
# pages that keep their own lists (optimum-graphcore, Lightning, poprun).
DIFFERENCE_PAGES = ["differences.md", "ipuconfig.md", "lightning.md", "replication.md"]


def table_rows(text: str, heading: str) -> list[list[str]]:
    """The cells of each row of the first table under `## heading`."""
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in split_row(line)] for line in lines[2:]]


def split_row(line: str) -> list[str]:
    """A Markdown table row's cells; `\\|` and `|` inside backticks stay in their cell."""
    cells, cell, in_code = [], "", False
    for index, char in enumerate(line.strip()[1:-1]):
        if char == "`":
            in_code = not in_code
        if char == "|" and not in_code and line.strip()[index] != "\\":
            cells.append(cell)
            cell = ""
        else:
            cell += char
    return cells + [cell]


def ledger() -> dict[str, dict[str, str]]:
    with open(LEDGER, encoding="utf-8") as handle:
        rows = table_rows(handle.read(), "Claims")
    return {row[0]: dict(zip(COLUMNS, row)) for row in rows}


def uses() -> dict[str, set[str]]:
    """Each claim id, with the files (relative to the repository) that mark it."""
    found: dict[str, set[str]] = {}
    for path in PLACES:
        with open(path, encoding="utf-8") as handle:
            for match in MARK.finditer(handle.read()):
                claim = match.group(1) or match.group(2)
                found.setdefault(claim, set()).add(os.path.relpath(path, ROOT))
    return found


def test_every_row_has_its_six_columns_and_a_unique_id():
    with open(LEDGER, encoding="utf-8") as handle:
        rows = table_rows(handle.read(), "Claims")
    for row in rows:
        assert len(row) == len(COLUMNS), f"docs/claims.md: row {row[0]!r} has {len(row)} cells"
        assert all(row), f"docs/claims.md: row {row[0]!r} has an empty cell"
    ids = [row[0] for row in rows]
    assert len(ids) == len(set(ids)), "docs/claims.md: an id is used for two rows"


def test_every_claim_a_page_marks_has_a_row():
    missing = {claim: sorted(files) for claim, files in uses().items() if claim not in ledger()}
    assert not missing, f"claim ids with no row in docs/claims.md: {missing}"


def test_every_row_is_used_exactly_where_it_says():
    used = uses()
    for claim, row in ledger().items():
        where = set(re.findall(r"[\w./-]+\.(?:py|md)", row["where"]))
        assert claim in used, f"docs/claims.md: {claim} is marked in no lesson or page"
        assert where == used[claim], (f"docs/claims.md: {claim} says where {sorted(where)}, "
                                      f"but is marked in {sorted(used[claim])}")


def test_every_source_is_public_and_names_its_release():
    for claim, row in ledger().items():
        assert PUBLIC_SOURCE.search(row["source"]), (
            f"docs/claims.md: {claim}'s source is not a URL, owner/repo@release:path or arXiv id")
        assert not PRIVATE.search(row["source"]), (
            f"docs/claims.md: {claim}'s source is not public: {row['source']}")


def words(text: str) -> str:
    """Text with its line breaks and runs of spaces made single spaces, as a reader sees it."""
    return " ".join(text.split())


def test_the_simulator_column_follows_or_quotes_a_difference():
    pages = []
    for name in DIFFERENCE_PAGES:
        with open(os.path.join(ROOT, "docs", name), encoding="utf-8") as handle:
            pages.append(handle.read())
    differences = words(" ".join(pages))
    for claim, row in ledger().items():
        verdict = row["simulator"]
        quoted = re.fullmatch(r'differs: "(.+)"', verdict)
        assert verdict in ("follows", "n/a") or quoted, (
            f"docs/claims.md: {claim}'s simulator column is not follows, n/a or differs: \"...\"")
        if quoted:
            assert words(quoted.group(1)) in differences, (
                f"docs/claims.md: {claim} quotes a difference no page of {DIFFERENCE_PAGES} holds")


@pytest.mark.parametrize("lesson", sorted(glob.glob(os.path.join(ROOT, "walkthroughs", "*.py"))),
                         ids=os.path.basename)
def test_every_lesson_was_reviewed(lesson):
    with open(LEDGER, encoding="utf-8") as handle:
        places = [row[0] for row in table_rows(handle.read(), "Reviews")]
    name = os.path.relpath(lesson, ROOT)
    assert any(name in place for place in places), f"docs/claims.md: no review of {name}"


@pytest.mark.parametrize("page", [p for p in PLACES if not p.endswith(".py")],
                         ids=lambda p: os.path.relpath(p, ROOT))
def test_every_docs_page_and_the_readme_was_reviewed(page):
    with open(LEDGER, encoding="utf-8") as handle:
        places = [row[0] for row in table_rows(handle.read(), "Reviews")]
    name = os.path.relpath(page, ROOT)
    assert name in places, f"docs/claims.md: no review of {name}"


def test_a_quoted_difference_may_break_across_lines():
    assert words("the V-IPU and MPI\n  flags are noted") == "the V-IPU and MPI flags are noted"


def test_a_release_tag_may_hold_slashes():
    assert PUBLIC_SOURCE.fullmatch("graphcore/poptorch@sdk/poptorch/3.4.0:python/options.py")
    assert not PUBLIC_SOURCE.search("graphcore/poptorch@sdk/poptorch/3.4.0")  # no path


def test_the_row_splitter_keeps_pipes_in_code():
    assert split_row("| a | `x | y` | b \\| c |") == [" a ", " `x | y` ", " b \\| c "]
