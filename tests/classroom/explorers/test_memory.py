"""The memory planner driven headless: its bars are the runtime's memory plan."""
import matplotlib
import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.classroom import memory_planner
from ipu_tutorials.classroom.explorers.memory import even_split, plan_memory_for

matplotlib.use("Agg")


def figure_bytes(explorer) -> str:
    return explorer.output.outputs[0]["data"]["image/png"]


def test_memory_planner_marks_out_of_memory_and_offload_fixes_it():
    planner = memory_planner(size="1.3B", ipus=16, optimizer="AdamW")
    assert "out of memory" in planner.text
    png = figure_bytes(planner)
    planner.controls["offload"].value = True
    planner.controls["half"].value = True
    assert "fits" in planner.text and figure_bytes(planner) != png
    assert [m.total for m in planner.result["memory"].ipus] == [
        m.total for m in plan_memory_for("1.3B", 16, "AdamW", True, True).ipus]


def test_memory_planner_numbers_are_the_runtime_plan():
    from ipu_tutorials.tutorial.models import TransformerLM, split_layers

    with torch.device("meta"):
        model = TransformerLM(width=768, depth=12, heads=12, recompute_checkpoint_every_layer=True)
    split_layers(model, even_split(12, 4))
    opts = poptorch.Options()
    opts.Training.gradientAccumulation(8)
    opts.TensorLocations.setOptimizerLocation(poptorch.TensorLocationSettings().useOnChipStorage(False))
    training = poptorch.trainingModel(model, opts, poptorch.optim.LAMB(model.parameters()))
    tokens = torch.zeros(32, 128, dtype=torch.long, device="meta")
    training.compile(tokens, tokens)
    planner = memory_planner(size="125M", ipus=4, optimizer="LAMB", offload=True)
    assert [m.as_dict() for m in planner.result["memory"].ipus] == [
        m.as_dict() for m in training.plan.memory.ipus]


@pytest.mark.parametrize("optimizer, state", [("SGD", 0), ("SGD + momentum", 1), ("AdamW", 2)])
def test_optimizer_choice_changes_the_state_bar(optimizer, state):
    memory = plan_memory_for("125M", 4, optimizer)
    assert all(m.optimizer == state * m.weights for m in memory.ipus if m.weights)


def test_even_split_favours_the_middle_ipus():
    assert even_split(24, 16) == [1] + [2] * 8 + [1] * 7
    assert sum(even_split(13, 4)) == 13
