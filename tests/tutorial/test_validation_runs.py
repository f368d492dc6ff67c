"""The validation set (docs/cost-model.md, "Validation against runs it was not calibrated on").

Simulated figures are deterministic, so the ratios are asserted: every run fits with the
memory check on, lands within 1.25x of its published throughput, except the runs listed in
OUTSIDE_1_25, which stay within 2x until the cost model explains them.
"""
import pytest

from ipu_tutorials.tutorial import published_runs, validation_runs

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
