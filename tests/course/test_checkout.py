"""The checkout a course command is given: its folders under the root unless pointed elsewhere,
and a missing one is one line naming it and the way out."""
import pytest

from ipu_tutorials.course.checkout import Checkout, CourseError, choose


def test_the_folders_lie_under_the_root_unless_given(tmp_path):
    checkout = Checkout(str(tmp_path / "course" / ".."))
    assert checkout.root == str(tmp_path)
    assert (checkout.walkthroughs, checkout.notebooks, checkout.static, checkout.pyproject) == (
        str(tmp_path / "walkthroughs"), str(tmp_path / "notebooks"), str(tmp_path / "static"),
        str(tmp_path / "pyproject.toml"))
    assert Checkout(str(tmp_path), walkthroughs="/elsewhere").walkthroughs == "/elsewhere"


def test_a_missing_folder_is_one_line_naming_it_and_the_way_out(tmp_path):
    (tmp_path / "notebooks").mkdir()
    checkout = Checkout(str(tmp_path))
    assert checkout.need("notebooks") is checkout
    with pytest.raises(CourseError) as raised:
        checkout.need("notebooks", "static")
    assert str(raised.value) == (f"no static/ in {tmp_path}: run it in a checkout of the course "
                                 f"or pass --root DIR")
    with pytest.raises(CourseError, match=r"^no pyproject\.toml in "):
        checkout.need("pyproject")


def test_lessons_are_chosen_by_prefix_in_the_checkouts_order_each_once():
    known = ["01_basics", "04_pipelining", "05_sharding"]
    assert choose(["05", "04", "04_pipe"], known, "lesson") == ["04_pipelining", "05_sharding"]
    assert choose([], known, "lesson") == known
    with pytest.raises(CourseError, match="^no lesson named 9, 7; known: 01_basics, 04_pip"):
        choose(["9", "01", "7"], known, "lesson")
