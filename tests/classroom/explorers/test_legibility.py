"""Every explorer a lesson shows reads where it is shown, at the lesson's controls and at each
control's extreme values (the others as the lesson sets them): no text under 9 px at the lesson
column's width, no legend over plotted data, no text drawn over another."""
import matplotlib

matplotlib.use("Agg")

import ipywidgets as widgets  # noqa: E402
import pytest  # noqa: E402

from ipu_tutorials.profiling.style import EXPLORER_DPI  # noqa: E402
from tests.legibility import problems  # noqa: E402
from tests.walkthrough_code import explorer as shown_explorer  # noqa: E402
from tests.walkthrough_code import explorer_calls  # noqa: E402


def extremes(control: widgets.Widget) -> list:
    """The values at either end of a control."""
    if isinstance(control, widgets.Checkbox):
        return [False, True]
    if isinstance(control, widgets.Dropdown):
        return [control.options[0], control.options[-1]]
    return [control.min, control.max]


def test_the_lessons_show_every_explorer():
    called = {call.split("(")[0] for _, call in explorer_calls()}
    assert called == {"step_explorer", "data_loading_explorer", "memory_planner",
                      "pipeline_explorer", "phase_planner", "memory_tuning_explorer",
                      "precision_explorer", "replication_explorer", "report_explorer",
                      "multiconv_explorer", "ipuconfig_explorer", "lightning_explorer",
                      "capstone_explorer", "schedule_explorer"}


@pytest.mark.parametrize("lesson, call", explorer_calls(), ids=[
    f"{lesson[:2]} {call.split('(')[0]}" for lesson, call in explorer_calls()])
def test_each_explorer_reads_at_the_column_width_at_every_extreme(lesson, call):
    explorer = shown_explorer(lesson, call)  # the walkthrough's own call, e.g. capstone_explorer()
    found = {"the lesson's controls": problems(explorer.figure, EXPLORER_DPI)}
    start = explorer.values
    for name, control in explorer.controls.items():
        for value in extremes(control):
            if value == start[name]:
                continue  # drawn already, at the lesson's controls
            control.value = value
            if explorer.figure is not None:  # a broken rule shows its text alone
                found[f"{name}={value}"] = problems(explorer.figure, EXPLORER_DPI)
        control.value = start[name]
    failing = {setting: p for setting, p in found.items() if p}
    assert not failing, "\n".join(f"{setting}:\n{p}" for setting, p in failing.items())
