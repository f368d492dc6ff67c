"""Schedules drawn side by side: a panel each, a box per forward and backward."""
import matplotlib

from ipu_tutorials.profiling.diagrams import unit_stages
from ipu_tutorials.torch_engines.figures import draw_schedules
from ipu_tutorials.torch_engines.schedules import ipu_step, replay, torch_orders

matplotlib.use("Agg")


def test_a_panel_per_schedule_with_a_box_per_action():
    times = unit_stages(4)
    panels = [("IPU", "IPU", ipu_step(times, 10)),
              ("1F1B", "stage", replay(torch_orders("1F1B", 4, 10), times))]
    figure = draw_schedules(panels, 4)
    axes = figure.axes
    assert [ax.get_title() for ax in axes] == ["IPU", "1F1B"]
    assert [len(ax.patches) for ax in axes] == [80, 80]  # 4 stages x 10 x (F and B)
    assert [t.get_text() for t in axes[1].get_yticklabels()] == [f"stage {i}" for i in range(4)]
    assert axes[-1].get_xlim() == (0, 39)  # 3 (M + P - 1) units
    # the legend is under the last panel, where no box can meet it
    assert [t.get_text() for t in axes[-1].get_legend().get_texts()] == ["forward", "backward"]
