"""The validation set (docs/cost-model.md, "Validation against runs it was not calibrated on").

Simulated figures are deterministic, so the ratios are asserted: every run fits with the
memory check on, lands within 1.25x of its published throughput, except the runs listed in
OUTSIDE_1_25, which stay within 2x until the cost model explains them.
"""
import pytest

from ipu_tutorials.calibration import published_runs, validation_runs

# Known misses of the current model (docs/cost-model.md says why it is thought to miss them)
OUTSIDE_1_25 = {
    "ViT-B/16 pre-training, Bow Pod16, 4 IPUs x 4 replicas, LAMB",
    "ViT-B/16 pre-training, Bow Pod64, 4 IPUs x 16 replicas, LAMB",
}


@pytest.fixture(scope="module")
def runs():
    return validation_runs.all_runs()


def test_the_validation_set_has_at_least_10_runs_apart_from_the_calibration(runs):
    calibration = {run.name for run in published_runs.all_runs()}
    assert len(runs) >= 10
    assert not calibration & {run.name for run in runs}


def test_every_validation_run_fits_as_published(runs):
    assert all(run.plan.memory.fits for run in runs)


def test_every_validation_run_outside_the_known_misses_lands_within_1_25x(runs):
    outside = {run.name for run in runs if not 1 / 1.25 <= run.ratio <= 1.25}
    assert outside == OUTSIDE_1_25, {run.name: round(run.ratio, 2) for run in runs}
    assert all(0.5 <= run.ratio <= 2.0 for run in runs)


def test_bert_large_phase_2_gains_from_pod16_to_pod64_as_graphcore_published(runs):
    pod16, pod64 = (next(run for run in runs if run.name.startswith(f"BERT-Large phase 2 (seq 512), Bow {pod}"))
                    for pod in ("Pod16", "Pod64"))
    published = pod64.published / pod16.published  # 6,543 / 1,973 = 3.32
    assert pod64.simulated / pod16.simulated == pytest.approx(published, rel=0.1)


def test_the_lessons_quote_the_validation_tables_spread(runs):
    """Lessons that show throughput quote the spread; it must be the one computed here."""
    import pathlib
    import re
    ratios = [run.ratio for run in runs]
    within = sum(1 / 1.25 <= r <= 1.25 for r in ratios)
    words = {7: "seven", 8: "eight", 9: "nine", 10: "ten", 11: "eleven", 12: "twelve"}
    lessons = sorted(pathlib.Path(__file__).parents[2].glob("walkthroughs/*.py"))
    quoting = [p for p in lessons if "How far to trust a simulated throughput" in p.read_text()]
    assert len(quoting) >= 8
    for path in quoting:
        text = " ".join(path.read_text().replace("#", " ").split())
        low, high = map(float, re.search(r"between ([\d.]+)x and ([\d.]+)x", text).groups())
        assert (low, high) == (round(min(ratios), 2), round(max(ratios), 2)), path.name
        assert f"{words[len(runs)]} published" in text and f"{words[within]} of them" in text


def test_the_vit_layer_with_separate_projections_computes_the_fused_layer():
    """vit/pytorch's query, key and value Linears are the fused projection split in three."""
    import torch
    from ipu_tutorials.tutorial.models import TransformerLayer
    torch.manual_seed(0)
    fused, vit = TransformerLayer(32, 4), validation_runs.ViTLayer(32, 4, 0.0, 0.0)
    state = {k: v for k, v in fused.state_dict().items() if not k.startswith("qkv")}
    for name, w, b in zip(("query", "key", "value"), fused.qkv.weight.chunk(3), fused.qkv.bias.chunk(3)):
        state[f"{name}.weight"], state[f"{name}.bias"] = w, b
    vit.load_state_dict(state)
    x = torch.randn(2, 7, 32)
    torch.testing.assert_close(vit(x), fused(x), rtol=1e-5, atol=1e-5)


def test_vit_pretraining_streams_8_bit_images_and_fine_tuning_float16(runs):
    """benchmarks.yml: pre-training runs with --byteio true, fine-tuning with configs.yml's
    byteio: False (float16 images), so a fine-tuning image is twice the bytes."""
    from ipu_tutorials.simulator.costs import host_io_bytes
    vit = {run.name.split(",")[0] + run.name.split(",")[1]: run.plan for run in runs
           if run.name.startswith("ViT")}
    per_image = {name: host_io_bytes(plan.graph)[0] / plan.spec.micro_batch
                 for name, plan in vit.items()}
    pretraining = per_image["ViT-B/16 pre-training Bow Pod16"]
    assert 3 * 224 * 224 <= pretraining < 3 * 224 * 224 + 64
    assert 2 * 3 * 224 * 224 <= per_image["ViT-B/16 fine-tuning Bow Pod16"] < 2 * 3 * 224 * 224 + 64


def test_vit_pretraining_returns_the_mixup_loss_and_accuracy_as_pretrain_py_does():
    """models/modules.py: the loss weighs each image's label by the micro-batch's mixup
    coefficient and its neighbour's by the rest; the accuracy (metrics.py) likewise."""
    import torch
    model = validation_runs.VisionTransformer(width=16, depth=1, heads=2, patch=8, image=16,
                                              classes=3, layers_per_ipu=(1,), pretraining=True)
    logits = torch.tensor([[2.0, 0.0, 0.0], [0.0, 3.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    labels, share = torch.tensor([0, 1, 1, 2]), torch.tensor([0.25])
    loss, accuracy = model._mixed_loss_and_accuracy(
        logits, torch.nn.functional.cross_entropy(logits, labels), labels, share)
    other = labels.roll(1, 0)  # [2, 0, 1, 1]: the neighbour mixed into each image
    expected = (0.25 * torch.nn.functional.cross_entropy(logits, labels)
                + 0.75 * torch.nn.functional.cross_entropy(logits, other))
    torch.testing.assert_close(loss, expected, rtol=1e-5, atol=1e-5)
    # predictions [0, 1, 2, 0]: 2 of 4 match the labels, 0 of 4 their neighbours'
    torch.testing.assert_close(accuracy, torch.tensor(0.25 * 0.5 + 0.75 * 0.0))
