"""Graphcore's popdist example trains under our poprun with the flags it was published with.

The example (tutorials/feature_examples/pytorch/popdist in graphcore/examples, formerly
feature_examples/pytorch/popdist in graphcore/tutorials) is read from a checkout, not copied;
`published_example/` swaps its imports (`import poptorch`, `import popdist`) for
ipu_tutorials' and CIFAR-10 for torchvision's FakeData. Its own test launches it as `poprun
--mpi-global-args --tag-output --num-replicas 4 --num-instances 2 python popdist_training.py`
and checks that both instances end with the same weights and biases; we add `--epochs 1
--dataloader-workers 0` to keep the run short. ResNet-18's BatchNorm layers update their running
statistics in place under replication, which PopTorch allows (simulator/replica_state.py): each
replica keeps its own, and each instance's host reads its first replica's.

Where no checkout is found, `programs/batchnorm_cnn.py` does the same things small, and a plain
PyTorch loop replays every replica of its run.
"""
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
SHIMS = Path(__file__).parent / "published_example"
PROGRAM = Path(__file__).parent / "programs" / "batchnorm_cnn.py"
sys.path.insert(0, str(PROGRAM.parent))
import batchnorm_cnn as program  # noqa: E402  (the program itself, for the reference)

PUBLISHED_FLAGS = ["--mpi-global-args", "--tag-output", "--num-replicas", "4",
                   "--num-instances", "2"]
# a checkout of graphcore/examples or of graphcore/tutorials (before it moved): its path to the file
CHECKOUTS = [
    (os.environ.get("GRAPHCORE_EXAMPLES", "/work/peer/graphcore-examples"),
     "tutorials/feature_examples/pytorch/popdist/popdist_training.py"),
    (os.environ.get("GRAPHCORE_TUTORIALS", "/work/peer/graphcore-tutorials"),
     "feature_examples/pytorch/popdist/popdist_training.py"),
]


def published_example() -> Path | None:
    """The example's script, from the first checkout that has it (graphcore/tutorials' last
    commit keeps only a note saying where the file moved)."""
    for root, path in CHECKOUTS:
        script = Path(root) / path
        if script.is_file() and "popdist.poptorch.Options()" in script.read_text():
            return script
    return None


EXAMPLE = published_example()


def poprun(program_and_args: list[str], cwd: Path, env: dict, timeout: float):
    """Run poprun in a session of its own; whatever happens, nothing of it is left running."""
    process = subprocess.Popen([sys.executable, "-m", "ipu_tutorials.poprun", *PUBLISHED_FLAGS,
                                "python", *program_and_args], cwd=cwd,
                               env={**os.environ, "HOME": str(cwd), **env},
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return process.returncode, output


def checkpoints(folder: Path) -> tuple[dict, dict]:
    first, second = (torch.load(folder / f"checkpoint-instance-{i}.pt", weights_only=True)
                     for i in (0, 1))
    return first, second


@pytest.mark.skipif(EXAMPLE is None, reason="needs a graphcore/examples checkout (set "
                                            "GRAPHCORE_EXAMPLES to its folder)")
def test_the_popdist_example_trains_in_sync_under_poprun(tmp_path):
    code, output = poprun([str(EXAMPLE), "--epochs", "1", "--dataloader-workers", "0"], tmp_path,
                          {"PYTHONPATH": f"{SHIMS}{os.pathsep}{ROOT}"}, timeout=900)
    assert code == 0, output[-6000:]
    assert "[1,0]: INFO:root:Validation accuracy:" in output
    first, second = checkpoints(tmp_path)
    # the example's own check: the same weights and biases in both instances
    trained = [name for name in first if name.endswith(("weight", "bias"))]
    assert len(trained) == 62  # ResNet-18's convolutions, BatchNorms and classifier
    for name in trained:
        torch.testing.assert_close(first[name], second[name])
    # which its test leaves out: each instance reads its own first replica's statistics
    means = [name for name in first if name.endswith("running_mean")]
    assert len(means) == 20 and any(not torch.equal(first[n], second[n]) for n in means)


def replayed_in_plain_pytorch():
    """The program's run stepped by hand: four replicas, shared weights (the mean of their
    gradients), each with its own BatchNorm buffers, each on its own micro-batch."""
    torch.manual_seed(0)  # instance 0's weights, which every instance gets at compile
    model = program.Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=program.LR, momentum=program.MOMENTUM)
    norm = model.features[1]
    replicas = [{k: v.clone() for k, v in norm._buffers.items()} for _ in range(4)]
    data = program.dataset(train=True)
    images = torch.stack([data[i][0] for i in range(program.SAMPLES)])
    labels = torch.tensor([data[i][1] for i in range(program.SAMPLES)])
    share, call = program.SAMPLES // 2, 2 * program.BATCH  # per instance; per instance call
    for _ in range(program.EPOCHS):
        for step in range(share // call):
            optimizer.zero_grad()
            for replica in range(4):
                instance, local = divmod(replica, 2)
                start = instance * share + step * call + local * program.BATCH
                rows = slice(start, start + program.BATCH)
                norm._buffers.update(replicas[replica])  # updated in place by the forward pass
                (model(images[rows], labels[rows])[1] / 4).backward()
            optimizer.step()
    return model.state_dict(), replicas


def test_a_batchnorm_cnn_trains_under_poprun_as_four_replicas_would(tmp_path):
    code, output = poprun([str(PROGRAM), str(tmp_path)], tmp_path, {
        "PYTHONPATH": str(ROOT), "IPU_TUTORIALS_INSTANCE_TIMEOUT": "120"}, timeout=300)
    assert code == 0, output[-6000:]
    assert "does not support broadcasting buffers" not in output
    assert "[1,0]: Validation accuracy:" in output and "[1,1]: Validation accuracy:" in output
    first, second = checkpoints(tmp_path)
    weights, replicas = replayed_in_plain_pytorch()
    for name in first:
        if name.endswith(("weight", "bias")):
            torch.testing.assert_close(first[name], second[name])
            torch.testing.assert_close(first[name], weights[name], rtol=1e-5, atol=1e-5)
    # each instance's host reads its first replica: global replicas 0 and 2
    for checkpoint, replica in ((first, replicas[0]), (second, replicas[2])):
        for key in ("running_mean", "running_var", "num_batches_tracked"):
            torch.testing.assert_close(checkpoint[f"features.1.{key}"], replica[key],
                                       rtol=1e-5, atol=1e-5)
    assert not torch.equal(first["features.1.running_mean"], second["features.1.running_mean"])
