"""`ipu-course pages`: it names a page whose generated part is out of date, rewrites that part
and nothing else of the page, and says in one line when the page, its markers or the checkout's
own package is missing."""
import os
import shutil

import pytest

from ipu_tutorials.course import cli, pages
from ipu_tutorials.course.checkout import Checkout, CourseError

from .stored import CHECKOUT


@pytest.fixture
def checkout(tmp_path):
    """A checkout of the docs pages whose package is this one (a link: the imports drawn)."""
    shutil.copytree(os.path.join(CHECKOUT.root, "docs"), tmp_path / "docs",
                    ignore=shutil.ignore_patterns("_site", "*.png"))
    (tmp_path / "ipu_tutorials").symlink_to(os.path.join(CHECKOUT.root, "ipu_tutorials"))
    return Checkout(str(tmp_path))


def test_pages_names_a_stale_page_then_rewrites_only_its_part(checkout, capsys):
    pytest.importorskip("grimp", reason="the test extra installs grimp")
    page = os.path.join(checkout.root, "docs", "differences.md")
    current = open(page).read()
    with open(page, "w") as f:
        f.write(current.replace("<!-- extras:begin -->\n", "<!-- extras:begin -->\n| `x` |\n"))
    root = ["--root", checkout.root]
    assert cli.main(["pages", "--check", *root]) == 1
    assert capsys.readouterr().err == "stale: docs/differences.md: run ipu-course pages\n"
    assert cli.main(["pages", *root]) == 0
    assert capsys.readouterr().out == "docs/differences.md\n"
    assert open(page).read() == current
    assert cli.main(["pages", "--check", *root]) == 0


def test_a_page_without_its_markers_is_one_line(checkout):
    page = os.path.join(checkout.root, "docs", "differences.md")
    text = open(page).read()
    with open(page, "w") as f:
        f.write(text.replace("<!-- extras:end -->", ""))
    with pytest.raises(CourseError, match=r"^docs/differences.md lost its <!-- extras:begin --> "
                                          r"\.\.\. <!-- extras:end --> markers$"):
        pages.write(checkout)


def test_a_checkout_whose_package_python_does_not_import_is_one_line(checkout):
    os.remove(os.path.join(checkout.root, "ipu_tutorials"))
    os.mkdir(os.path.join(checkout.root, "ipu_tutorials"))
    with pytest.raises(CourseError, match=r"^Python imports .*, not .*: install the checkout "):
        pages.stale(checkout)


def test_the_extras_table_has_a_row_per_declared_extra():
    from ipu_tutorials.support.extras_registry import EXTRAS
    rows = pages.extras_table().splitlines()
    assert rows[0] == "| extra | why the simulator has it | the real way |"
    assert [r.split(" | ")[0] for r in rows[2:]] == [f"| `{e.name}`" for e in EXTRAS]
