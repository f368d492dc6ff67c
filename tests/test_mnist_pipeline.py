"""mnist_pipeline.py, tested like Graphcore's own tests of it: run it, grep what it prints."""
import os
import re
import subprocess
import sys

import pytest
import torch

import mnist_pipeline
from ipu_tutorials.tutorial.models import accuracy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "mnist_pipeline.py")


def run_script(*args, cwd):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          cwd=cwd, timeout=600)


def test_accuracy_of_a_fixed_input():
    predictions = torch.tensor([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]])
    assert accuracy(predictions, torch.tensor([1, 0, 0, 0])) == 75.0
    # fewer predictions than labels (OutputMode.Final): the last labels are used
    assert accuracy(predictions[-2:], torch.tensor([0, 0, 1, 1])) == 50.0


@pytest.mark.parametrize("strategy", ["pipelined", "sharded"])
@pytest.mark.parametrize("offload", [False, True])
def test_strategies_and_offload_train_to_an_accuracy_bound(strategy, offload, tmp_path, capsys):
    args = ["--dataset", "embedded", "--epochs", "6", "--strategy", strategy, "--no-progress",
            "--profile", "--profile-dir", str(tmp_path)]
    test_accuracy = mnist_pipeline.main(mnist_pipeline.parse_args(
        args + (["--offload-optimiser"] if offload else [])))
    assert 90.0 < test_accuracy < 100.0
    out = capsys.readouterr().out
    assert f"Accuracy on test set: {test_accuracy:0.2f}%" in out
    for name in ("training", "inference"):
        assert sorted(os.listdir(tmp_path / name)) == ["summary.json", "trace.json"]
    offloaded = re.findall(r"^\s+\d\s+B\d .* (\S+ \S+)\s+\d+%$", out, re.M)
    assert len(offloaded) == 4 and (offloaded[0] != "0 B") == offload


def test_pipelined_and_sharded_reach_identical_weights_in_different_time(capsys):
    results = {}
    for strategy in ("pipelined", "sharded"):
        torch.manual_seed(0)
        args = mnist_pipeline.parse_args(["--dataset", "embedded", "--epochs", "1",
                                          "--strategy", strategy, "--no-progress"])
        results[strategy] = mnist_pipeline.main(args)
        out = capsys.readouterr().out
        results[strategy + " time"] = re.search(r"time per step: ([\d.]+) ms", out).group(1)
    assert results["pipelined"] == results["sharded"]
    assert float(results["pipelined time"]) < float(results["sharded time"])


def test_the_script_runs_and_reports_its_data(tmp_path):
    result = run_script("--dataset", "embedded", "--epochs", "1", "--strategy", "sharded",
                        cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Data: embedded MNIST digits: 4,000 training and 1,000 test images" in result.stdout
    assert re.search(r"Accuracy on test set: \d+\.\d\d%", result.stdout)
    assert "Simulated IPU time per step" in result.stdout
    # one epoch of 4,000 images: 1/45 of the measured default run's 26 s
    assert "Expect about 1 s of host time on an idle 2-core machine" in result.stdout


def test_the_default_run_is_expected_to_take_the_measured_time():
    images = mnist_pipeline.EMBEDDED_EPOCHS * 4000
    assert round(mnist_pipeline.expected_seconds(images)) == 26


@pytest.mark.parametrize("bad", [["--batch-size", "0"], ["--strategy", "phased"],
                                 ["--learning-rate", "fast"], ["--dataset", "cifar"]])
def test_bad_option_values_exit_2_with_the_usage(bad, tmp_path):
    result = run_script(*bad, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("usage: mnist_pipeline.py")


def test_a_configuration_the_pipeline_forbids_fails_with_the_rule(tmp_path):
    result = run_script("--dataset", "embedded", "--gradient-accumulation", "3", cwd=tmp_path)
    assert result.returncode == 1
    assert "gradient accumulation must be at least 7; it is 3" in result.stderr
    assert "Traceback" not in result.stderr
    debug = run_script("--dataset", "embedded", "--gradient-accumulation", "3", "--debug",
                       cwd=tmp_path)
    assert "Traceback" in debug.stderr


def test_mnist_without_network_or_files_fails_clearly(tmp_path, monkeypatch):
    monkeypatch.setattr("socket.getaddrinfo", _no_network)
    data_dir = tmp_path / "mnist_data"
    with pytest.raises(RuntimeError, match="MNIST is not in .* could not be downloaded.*"
                                           "--dataset embedded"):
        mnist_pipeline.load_data(mnist_pipeline.parse_args(
            ["--dataset", "mnist", "--data-dir", str(data_dir)]))
    assert not data_dir.exists()  # no empty mnist_data/MNIST/raw left behind


def test_help_and_bad_arguments_answer_before_torch_is_imported():
    code = (f"import sys; sys.path.insert(0, {ROOT!r}); import mnist_pipeline; "
            f"print('torch' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "False"


def test_epochs_help_names_its_real_default(capsys):
    with pytest.raises(SystemExit):
        mnist_pipeline.parse_args(["-h"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: 3 on MNIST, 45 on the 4,000 embedded digits)" in text
    assert "(default: None)" not in text


def test_an_unwritable_profile_dir_exits_2_before_compiling(capsys):
    with pytest.raises(SystemExit) as info:
        mnist_pipeline.parse_args(["--profile", "--profile-dir", "/proc/no-such-dir"])
    assert info.value.code == 2
    assert "--profile-dir: cannot create '/proc/no-such-dir'" in capsys.readouterr().err


def _no_network(*args, **kwargs):
    raise OSError("network disabled by the test")


def test_replicas_in_one_process_multiply_the_images_per_call(tmp_path):
    result = run_script("--dataset", "embedded", "--epochs", "1", "--replication-factor", "2",
                        "--device-iterations", "2", "--no-progress", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "each epoch is 2 call(s) of 1,600 images" in result.stdout  # 40 x 2 x 2 x 10

