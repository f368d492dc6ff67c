"""lightning_mnist.py: trains offline on the embedded digits and prints accuracy and throughput."""
import re

import pytest

pytest.importorskip("lightning")

import lightning_mnist  # noqa: E402


def test_one_epoch_learns_and_reports(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    accuracy = lightning_mnist.main(["--epochs", "1", "--report-dir", "reports"])
    out = capsys.readouterr().out
    assert re.search(r"Trained 4,000 images in 10 IPU calls: [\d,]+ images/s simulated "
                     r"\(2 replicas x 4 IPUs\)", out)
    assert f"Accuracy on test set: {accuracy:.2f}%" in out
    assert accuracy > 80  # one epoch; the default five reach >= 95% (benchmarks/)
    assert (tmp_path / "reports" / "training" / "summary.json").exists()
    assert not (tmp_path / "lightning_logs").exists()
