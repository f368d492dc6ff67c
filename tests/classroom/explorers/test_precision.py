"""The precision explorer: what float16 keeps of small gradients, with and without scaling."""
import matplotlib
import pytest
import torch

from ipu_tutorials.classroom import precision_explorer
from ipu_tutorials.classroom.explorers.precision import (accumulate_in_half, scale_overflows,
                                                         survival)

matplotlib.use("Agg")


def figure_bytes(explorer) -> str:
    return explorer.output.outputs[0]["data"]["image/png"]


def test_precision_explorer_counts_what_survives():
    explorer = precision_explorer(loss_scale_log2=0)
    low = explorer.result["survived"]
    png = figure_bytes(explorer)
    explorer.controls["loss_scale_log2"].value = 10
    assert explorer.result["survived"] > low and figure_bytes(explorer) != png
    assert explorer.result["survived"] == survival(1024.0, torch.float16)["survived"]
    explorer.controls["dtype"].value = "float32"
    assert explorer.result["survived"] == explorer.result["total"]
    assert "100.0% of" in explorer.text


def test_too_large_a_scale_overflows():
    assert survival(2.0**16, torch.float16)["overflowed"] > 0
    assert survival(2.0**16, torch.bfloat16)["overflowed"] == 0  # bfloat16 has float32's range


def test_the_loss_scale_itself_overflows_float16_past_its_largest_number():
    # was wrong: at 2^16 the explorer blamed the gradients, whose histogram sits far left of
    # the overflow band; what overflows is the scale, the backward pass's first gradient
    assert not scale_overflows(2.0**15, torch.float16) and scale_overflows(2.0**16, torch.float16)
    assert not scale_overflows(2.0**24, torch.bfloat16)
    below, above = survival(2.0**15, torch.float16), survival(2.0**16, torch.float16)
    assert below["overflowed"] == 0 and not below["scale_overflows"]
    assert above["overflowed"] == above["total"] and above["scale_overflows"]
    assert (above["reference"].abs() * 2.0**16).max() < torch.finfo(torch.float16).max
    explorer = precision_explorer(loss_scale_log2=24)
    assert "the loss scale itself is past float16's largest number (65,504)" in explorer.text
    assert "every gradient is inf or nan" in explorer.figure.axes[0].get_title()


def test_bfloat16_loses_gradients_to_rounding_not_range_at_every_scale():
    # was wrong: bfloat16 reported 120 underflows at every loss scale, though it has float32's
    # range; they are values bfloat16 can hold, rounded away (p = 1 - 3e-5 rounds to 1)
    for log2 in (0, 10, 24):
        result = survival(2.0**log2, torch.bfloat16)
        assert result["underflowed"] == 0 and result["rounded"] == result["lost"] > 0
    explorer = precision_explorer(loss_scale_log2=0, dtype="bfloat16")
    assert ("0 underflow to zero, 120 rounded to zero although bfloat16 could hold them"
            in explorer.text)


def test_float16_losses_at_small_scales_are_underflows():
    result = survival(1.0, torch.float16)
    assert result["underflowed"] == result["lost"] > 0 and result["rounded"] == 0


def test_stochastic_rounding_keeps_small_addends_on_average():
    assert accumulate_in_half(1e-4, 2000, stochastic=False) == 1.0
    assert accumulate_in_half(1e-4, 2000, stochastic=True) == pytest.approx(1.2, abs=0.03)


def test_gradient_survival_does_not_depend_on_the_thread_count():
    from ipu_tutorials.classroom.explorers.precision import small_loss_network
    threads = torch.get_num_threads()
    counts = []
    try:
        for n in (1, 2):
            torch.set_num_threads(n)
            small_loss_network.cache_clear()
            counts.append(survival(1.0, torch.float16)["lost"])
    finally:
        torch.set_num_threads(threads)
        small_loss_network.cache_clear()
    assert counts[0] == counts[1]


COUNTS = ("import torch; from ipu_tutorials.classroom.explorers.precision import survival; "
          "print([survival(float(s), torch.float16)['lost'] for s in (1, 64)])")


def test_gradient_survival_does_not_depend_on_the_cpu_kernels():
    import os
    import subprocess
    import sys
    runs = set()
    for capability, threads in (("avx2", "1"), ("default", "2")):
        env = {**os.environ, "ATEN_CPU_CAPABILITY": capability, "OMP_NUM_THREADS": threads}
        runs.add(subprocess.run([sys.executable, "-c", COUNTS], env=env, capture_output=True,
                                text=True, check=True, timeout=600).stdout)
    assert len(runs) == 1 and "[" in runs.pop()


def test_exact_backward_gives_float32_gradients_of_the_float64_pass():
    import copy
    from ipu_tutorials.classroom.explorers.precision import (exact_backward, small_loss,
                                                             small_loss_network)
    network, images, labels = small_loss_network()
    exact, wide, plain = copy.deepcopy(network), copy.deepcopy(network).double(), copy.deepcopy(network)
    exact_backward(exact, images, labels)
    wide(images.double(), labels)[1].backward()
    plain(images, labels)[1].backward()
    for ours, reference, theirs in zip(exact.parameters(), wide.parameters(), plain.parameters()):
        assert ours.grad.dtype == torch.float32
        assert torch.equal(ours.grad, reference.grad.float())
        # a float32 pass at a loss of ~1e-5 is noisy: close to the largest gradient's scale only
        torch.testing.assert_close(ours.grad, theirs.grad, rtol=0,
                                   atol=1e-3 * theirs.grad.abs().max().item())
    assert small_loss() == pytest.approx(plain(images, labels)[1].item(), rel=1e-3)


def test_autocast_keeps_the_loss_in_float32_and_loses_no_gradient():
    # lesson 16: a whole bfloat16 pass rounds 120 gradients to zero; autocast, whose loss runs in
    # float32 (cross_entropy is on its CPU float32 list), rounds none away
    import copy

    from ipu_tutorials.classroom.explorers.precision import gradients, small_loss_network

    model, images, labels = copy.deepcopy(small_loss_network())
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = model(images, labels)[1]
    assert loss.dtype == torch.float32
    loss.backward()
    exact = gradients(torch.float64)
    autocast = torch.cat([p.grad.flatten() for p in model.parameters()])
    assert int(((autocast == 0) & (exact != 0)).sum()) == 0
    assert survival(1.0, torch.bfloat16)["lost"] > 0
