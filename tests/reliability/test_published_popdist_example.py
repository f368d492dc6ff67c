"""Graphcore's popdist example starts under our poprun with the flags it was published with.

The example (tutorials/feature_examples/pytorch/popdist in graphcore/examples) is read from the
peer checkout, not copied; `published_example/` swaps its imports (`import poptorch`,
`import popdist`) for ipu_tutorials' and replaces the CIFAR-10 download with 256 random images.
Its own test launches it as `poprun --mpi-global-args --tag-output --num-replicas 4
--num-instances 2 python popdist_training.py`; we add `--epochs 1 --dataloader-workers 0` to
keep the run short.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = Path("/work/peer/examples/tutorials/feature_examples/pytorch/popdist/popdist_training.py")
SHIMS = Path(__file__).parent / "published_example"
PUBLISHED_FLAGS = ["--mpi-global-args", "--tag-output", "--num-replicas", "4",
                   "--num-instances", "2"]


@pytest.mark.skipif(not EXAMPLE.exists(), reason="needs the graphcore/examples checkout")
def test_the_popdist_example_trains_in_sync_under_poprun(tmp_path):
    env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": f"{SHIMS}{os.pathsep}{ROOT}",
           # ResNet-18's BatchNorm counters change in place; PopTorch's own switch for that
           "POPTORCH_DEFAULT_OPTIONS": '{"broadcastBuffers": false}'}
    command = [sys.executable, "-m", "ipu_tutorials.poprun", *PUBLISHED_FLAGS, "python",
               str(EXAMPLE), "--epochs", "1", "--dataloader-workers", "0"]
    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=900, start_new_session=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "[1,0]: INFO:root:Validation accuracy:" in result.stderr
    first, second = (torch.load(tmp_path / f"checkpoint-instance-{i}.pt", weights_only=True)
                     for i in (0, 1))
    # the example's own check: the same weights and biases in both instances (BatchNorm's
    # running statistics are each instance's own, as broadcastBuffers(False) says)
    trained = [name for name in first if name.endswith(("weight", "bias"))]
    assert len(trained) == 62  # ResNet-18's convolutions, BatchNorms and classifier
    for name in trained:
        torch.testing.assert_close(first[name], second[name])
