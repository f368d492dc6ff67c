"""Every figure a lesson draws with the plotting functions, and every diagram, reads where it is
shown: no text under 9 px at the lesson column's width, no legend over plotted data, no text
drawn over another. The checks themselves are tested first, on figures made to fail them."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from ipu_tutorials.course.diagrams import figures as diagrams  # noqa: E402
from ipu_tutorials.profiling.diagrams import DPI as DIAGRAM_DPI  # noqa: E402
from tests.legibility import (legends_over_data, overlapping_texts, problems,  # noqa: E402
                              shown_text_px, too_small)
from tests.profiling.lesson_figures import FIGURES  # noqa: E402

INLINE_DPI = 100  # the inline backend draws a lesson's figure at matplotlib's figure.dpi


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_small_type_is_found_and_so_is_type_a_wide_figure_shrinks():
    figure, ax = plt.subplots(figsize=(6, 3))
    ax.set_title("readable")
    ax.set_xlabel("too small", fontsize=6)  # 8.3 px at 100 dpi
    assert too_small(figure, INLINE_DPI) == ["'too small': 8.3 px"]
    wide, ax = plt.subplots(figsize=(14, 3))  # about 1,400 px, shown in the 708-px column
    assert "'0.0': 8.6 px" in too_small(wide, INLINE_DPI)  # a 10-point tick label
    narrow, ax = plt.subplots(figsize=(7, 3))
    assert too_small(narrow, INLINE_DPI) == []  # the same label at 13.9 px


def test_a_legend_over_bars_or_a_line_is_found_and_one_beside_them_is_not():
    figure, ax = plt.subplots(figsize=(6, 3))
    ax.bar(range(4), [4, 4, 4, 4], label="tall bars")
    ax.legend(loc="upper right")
    assert legends_over_data(figure) == [
        "the legend 'tall bars' covers Rectangle '_nolegend_' of the axes ''"]
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1))
    assert legends_over_data(figure) == []
    line_figure, ax = plt.subplots(figsize=(6, 3))
    ax.plot([0, 1], [0, 1], label="a rising line")
    ax.legend(loc="center")
    assert legends_over_data(line_figure) == [
        "the legend 'a rising line' covers Line2D 'a rising line' of the axes ''"]


def test_texts_drawn_over_each_other_are_found():
    figure, ax = plt.subplots(figsize=(6, 0.6))
    ax.set_yticks(range(6), [f"IPU {i}" for i in range(6)])  # six rows in 60 px
    assert "'IPU 0' on 'IPU 1'" in overlapping_texts(figure, INLINE_DPI)


@pytest.mark.parametrize("name", sorted(diagrams()))
def test_each_diagram_reads_at_the_column_width(name):
    drawn = diagrams()[name]()
    figure = drawn if hasattr(drawn, "savefig") else drawn.figure
    found = problems(figure, DIAGRAM_DPI)
    assert not found, found


@pytest.mark.parametrize("name", FIGURES)
def test_each_lesson_figure_reads_at_the_column_width(name, tmp_path):
    figure = FIGURES[name].draw(str(tmp_path))
    assert shown_text_px(figure, INLINE_DPI), "the figure draws no text"
    found = problems(figure, INLINE_DPI)
    assert not found, found
