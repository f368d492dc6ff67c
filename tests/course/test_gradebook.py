"""gradebook.py: the class summary page, a bar per exercise and a row per learner."""
import re

from ipu_tutorials.course.gradebook import exercise_bars, learner_table, write_summary
from ipu_tutorials.course.grading import Score

SCORES = [Score("ada", "02", "batch", "Combined batch", 2, 2, "right"),
          Score("bo", "02", "batch", "Combined batch", 0, 2, "multiply by <replicas>"),
          Score("ada", "01", "ipus", "IPUs needed", 1, 1, "right")]


def test_each_exercise_shows_the_share_of_learners_who_got_it_right():
    bars = exercise_bars(SCORES)
    assert (re.findall(r"width:(\d+%)'></div></div></td><td>(\d+ of \d+)", bars) ==
            [("100%", "1 of 1"), ("50%", "1 of 2")])  # lesson order: 01 before 02


def test_each_learner_has_a_total_and_a_cell_per_exercise():
    table = learner_table(SCORES)
    assert "<td>ada</td><td>3 / 3</td>" in table and "<td>bo</td><td>0 / 2</td>" in table
    assert "<small>not submitted</small>" in table  # bo never tried 01
    assert "multiply by &lt;replicas&gt;" in table  # feedback is escaped, never markup


def test_the_summary_page_is_self_contained_and_replaces_the_old_one(tmp_path):
    path = tmp_path / "summary.html"
    path.write_text("old")
    write_summary(SCORES, str(path))
    page = path.read_text()
    assert page.startswith("<!DOCTYPE html>") and page.count("class='bar'") == 2
    assert "<script" not in page and "http" not in page
    assert [p.name for p in tmp_path.iterdir()] == ["summary.html"]
