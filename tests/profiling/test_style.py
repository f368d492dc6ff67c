"""The readable sizes: a figure's points grow as the figure is shrunk to the column, and a
legend below the axes stays within their width, under their label."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from ipu_tutorials.profiling import style  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_a_figure_as_wide_as_the_column_is_shown_as_drawn_and_a_wider_one_shrinks():
    explorer = Figure(figsize=(style.width_inches(style.EXPLORER_DPI), 4), dpi=style.EXPLORER_DPI)
    assert style.shrink(explorer) == 1
    assert style.points(explorer, 10) == pytest.approx(9)  # 9 points at 80 dpi: 10 px
    wide = Figure(figsize=(14, 3), dpi=100)  # 1,400 px shown 708 px wide
    assert style.shrink(wide) == pytest.approx(708 / 1400)
    assert style.points(wide, 10) == pytest.approx(10 * 0.72 * 1400 / 708)
    assert style.shown_px(wide, 1.0) == pytest.approx(100 * 708 / 1400)


def test_text_width_is_measured_in_the_figures_font():
    one, two = style.text_width_px("forward"), style.text_width_px("forward\nbackward")
    assert 30 < one < 50  # 7 characters at 10 px
    assert two == pytest.approx(style.text_width_px("backward")) and two > one
    assert style.text_width_px("forward", 20) == pytest.approx(2 * one)


def test_readable_sets_the_ticks_labels_and_title_of_a_wide_figure_larger():
    figure, ax = plt.subplots(figsize=(14, 3))
    ax.set(xlabel="time", title="a step")
    style.readable(ax)
    text = style.points(figure, style.TEXT_PX)
    assert ax.xaxis.label.get_fontsize() == pytest.approx(text)
    assert all(t.get_fontsize() == pytest.approx(text) for t in ax.get_xticklabels())
    assert ax.title.get_fontsize() == pytest.approx(style.points(figure, style.TITLE_PX))


def test_a_legend_below_fits_the_axes_width_and_sits_under_the_axis_label():
    figure, ax = plt.subplots(figsize=(style.width_inches(100), 3))
    for name in ("host I/O", "host data preparation", "forward", "backward", "weight update"):
        ax.bar([0], [1], label=name)
    ax.set_xlabel("simulated time (ms)")
    figure.tight_layout()
    legend = style.legend_below(ax, title="not drawn: " + "the host's work, " * 12)
    figure.tight_layout()
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    box, axes = legend.get_window_extent(renderer), ax.get_window_extent(renderer)
    assert box.width <= axes.width
    assert box.y1 < ax.xaxis.label.get_window_extent(renderer).y0
    assert 1 < legend._ncols < 5  # some entries share a row; not all fit in one
    assert "\n" in legend.get_title().get_text()  # the long note is wrapped
