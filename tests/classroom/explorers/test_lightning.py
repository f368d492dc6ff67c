"""Lesson 14's explorer: its numbers are the options IPUStrategy builds, and the plan they compile."""
import pytest

pl = pytest.importorskip("lightning.pytorch")

from ipu_tutorials import poptorch  # noqa: E402
from ipu_tutorials.classroom.explorers.lightning import lightning_call, lightning_explorer  # noqa: E402


def test_explorer_uses_the_strategys_options():
    result = lightning_call(devices=2, accumulate_grad_batches=8, device_iterations=2,
                            batch_size=16)
    opts = result["options"]
    assert (opts.replication_factor, opts.Training.gradient_accumulation,
            opts.device_iterations) == (2, 8, 2)
    assert result["combined"] == 16 * 2 * 8 * 2
    assert result["plan"].config.samples_per_call == result["combined"]
    with pytest.raises(poptorch.Error, match="gradient accumulation must be at least 7"):
        lightning_call(accumulate_grad_batches=2)
    explorer = lightning_explorer()
    assert "512 images" in explorer.text
    explorer.controls["accumulate_grad_batches"].value = 2
    assert "at least 7" in explorer.text
