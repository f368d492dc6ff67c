"""The MultiConv explorer driven headless: its times are compiled plans."""
import matplotlib
import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.classroom.explorers.custom_ops import (Branches, compute_seconds,
                                                          multiconv_explorer)

matplotlib.use("Agg")


def figure_bytes(explorer) -> str:
    return explorer.output.outputs[0]["data"]["image/png"]


def test_the_time_is_the_runtime_plan():
    model = Branches(3, 32, multiconv=True)
    opts = poptorch.Options().deviceIterations(16).showCompilationProgressBar(False)
    inference = poptorch.inferenceModel(model, opts)
    inference.compile(torch.zeros(128, 32, 32, 32))
    assert compute_seconds(3, 32, True) == inference.plan.breakdown()["IPU compute"]


def test_multiconv_runs_branches_side_by_side_and_one_branch_gains_nothing():
    assert compute_seconds(1, 32, True) == compute_seconds(1, 32, False)
    for branches in (2, 3, 4):
        assert compute_seconds(branches, 32, True) < compute_seconds(branches, 32, False)
    # side by side: four branches take as long as the slowest (the 7x7) alone
    slowest_alone = compute_seconds(4, 32, False) - compute_seconds(3, 32, False)
    assert compute_seconds(4, 32, True) == pytest.approx(slowest_alone, rel=0.2)


def test_branches_compute_what_plain_convolutions_compute():
    torch.manual_seed(0)
    model = Branches(2, 4)
    x = torch.randn(2, 4, 8, 8)
    out = poptorch.inferenceModel(model, poptorch.Options().showCompilationProgressBar(False))(x)
    expected = torch.cat([conv(x) for conv in model.convs], dim=1)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)


def test_an_impossible_branch_count_names_the_range():
    with pytest.raises(ValueError, match="branches must be 1 to 4, got 5"):
        Branches(5)


@pytest.mark.parametrize("control, value", [("branches", 2), ("channels", 128),
                                            ("multiconv", False)])
def test_each_control_changes_the_text_and_the_figure(control, value):
    explorer = multiconv_explorer()
    text, png = explorer.text, figure_bytes(explorer)
    explorer.controls[control].value = value
    assert explorer.text != text and figure_bytes(explorer) != png
