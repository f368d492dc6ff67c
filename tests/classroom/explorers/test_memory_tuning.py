"""The memory-tuning explorer driven headless: each control moves the part of memory it should."""
import matplotlib
import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.classroom.explorers.memory_tuning import (
    IPUS, RECOMPUTATION, VOCAB, WIDTH, build_model, compile_tuned, memory_tuning_explorer,
    starting_options, tune)
from ipu_tutorials.optimum.graphcore.modeling_utils import SerializedEmbedding

matplotlib.use("Agg")


def figure_bytes(explorer) -> str:
    return explorer.output.outputs[0]["data"]["image/png"]


def test_the_explorer_shows_the_runtime_plan_and_redraws_on_every_change():
    explorer = memory_tuning_explorer()
    assert "out of memory" in explorer.text and "no step time" in explorer.text
    png = figure_bytes(explorer)
    explorer.controls["recomputation"].value = "checkpoint every layer"
    explorer.controls["head_serialization"].value = 8
    assert "fits" in explorer.text and "ms" in explorer.text
    assert figure_bytes(explorer) != png
    opts = starting_options()
    model = build_model(checkpoints=True, head_serialization=8)
    direct = compile_tuned(model, opts.setAvailableMemoryProportion(
        {f"IPU{i}": 0.6 for i in range(IPUS)}))
    assert [m.as_dict() for m in explorer.result["outcome"].memory.ipus] == [
        m.as_dict() for m in direct.memory.ipus]


def test_recomputation_off_keeps_every_in_flight_micro_batch_and_checkpoints_shrink_it():
    off, default, checkpoints = (tune(choice).memory for choice in RECOMPUTATION)
    for ipu in range(IPUS):
        assert off[ipu].activations >= default[ipu].activations > checkpoints[ipu].activations
        assert checkpoints[ipu].stash > default[ipu].stash  # the checkpoints are stashed
    # stage s keeps 2(N-1-s)+1 micro-batches in flight: 7 on the first IPU, 1 on the last
    assert off[0].activations == 7 * default[0].activations
    assert off[3].activations == default[3].activations


def test_a_lower_proportion_caps_temporaries_and_costs_time():
    roomy, tight = tune("checkpoint every layer", 0.2), tune("checkpoint every layer", 0.1)
    capacity = roomy.memory[0].capacity
    assert all(m.temporaries <= 0.1 * capacity + 1 for m in tight.memory.ipus)
    assert tight.memory[3].temporaries < roomy.memory[3].temporaries
    assert tight.step_ms > roomy.step_ms


def test_serialising_the_projection_cuts_the_last_ipus_temporaries_and_costs_time():
    whole, sliced = tune("checkpoint every layer"), tune("checkpoint every layer", 0.6, 8)
    assert sliced.memory[3].temporaries < whole.memory[3].temporaries / 4
    assert [m.temporaries for m in sliced.memory.ipus[:3]] == [
        m.temporaries for m in whole.memory.ipus[:3]]
    assert sliced.fits and not whole.fits


def test_serialising_the_embedding_splits_its_gradients_temporary_on_ipu_0():
    whole = tune("checkpoint every layer", 0.6, 8, 1)
    sliced = tune("checkpoint every layer", 0.6, 8, 4)
    table_gradient = VOCAB * WIDTH * 2  # float16
    assert whole.largest_lookup_gradient() == table_gradient
    assert sliced.largest_lookup_gradient() == table_gradient // 4
    assert tune("pipeline default").largest_lookup_gradient() == 0  # out of memory: no plan
    assert sliced.memory[0].activations > whole.memory[0].activations  # the masked slices
    assert [m.total for m in sliced.memory.ipus[1:]] == [m.total for m in whole.memory.ipus[1:]]


def test_the_model_serialised_computes_what_the_whole_one_does():
    torch.manual_seed(0)
    model = build_model()
    real = type(model)(vocab=50, width=16, depth=2, heads=2, context=8)
    tokens = torch.randint(0, 50, (2, 8))
    expected = real(tokens, tokens)
    real.head_serialization = 5
    real.embed = SerializedEmbedding(real.embed, 5)
    torch.testing.assert_close(real(tokens, tokens), expected, atol=1e-5, rtol=1e-5)


def test_an_unknown_recomputation_choice_lists_the_valid_ones():
    with pytest.raises(ValueError, match="checkpoint every layer"):
        tune("sometimes")
