"""The reference pages show the public API that tests/test_docstrings.py walks: every name the
facade, the Lightning classes and IPUConfig offer has its entry (mkdocstrings' id) on the built
site, so a docstring written is a docstring a reader can find."""
from __future__ import annotations

import pytest

from tests.test_docstrings import SURFACES

REFERENCE_PAGES = ("poptorch", "lightning", "optimum")


@pytest.fixture(scope="module")
def shown_ids(site) -> set[str]:
    bs4 = pytest.importorskip("bs4", reason="the docs extra installs beautifulsoup4")
    ids: set[str] = set()
    for page in REFERENCE_PAGES:
        html = (site / "reference" / f"{page}.html").read_text(encoding="utf-8")
        ids |= {tag["id"] for tag in bs4.BeautifulSoup(html, "html.parser").find_all(id=True)}
    return ids


@pytest.mark.parametrize("surface", sorted(SURFACES))
def test_every_public_name_has_its_entry_on_a_reference_page(surface, shown_ids):
    missing = sorted(name for name, entry in SURFACES[surface]().items()
                     if not shown_ids.intersection(entry.ids))
    assert not missing, (f"{surface}: not on docs/reference/{{{', '.join(REFERENCE_PAGES)}}}.md "
                         f"(add a ::: line or an inherited_members entry): {', '.join(missing)}")
