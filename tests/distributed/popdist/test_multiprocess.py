"""Real instances on the loopback interface: poprun, and configureProcessId without it.

Each test starts its own processes in a new session and kills that group in a finally, with
generous but bounded timeouts (a loaded 2-core machine starts torch slowly).
"""
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[3]
PROGRAM = Path(__file__).parent / "programs" / "train_replicas.py"
sys.path.insert(0, str(PROGRAM.parent))
import train_replicas  # noqa: E402  (the program itself, for the in-process references)

BOUND = 300  # seconds: no test here may hang longer than this


def run(command: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
    """Run a command in its own process group; kill the whole group whatever happens."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    process = subprocess.Popen(command, cwd=ROOT, env=environment, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=BOUND)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return subprocess.CompletedProcess(command, process.returncode, output, None)


def poprun(out_dir: Path, *program_args: str, env: dict | None = None):
    # the launcher flags of Graphcore's popdist example (tutorials/feature_examples/pytorch/
    # popdist/tests/test_popdist_training.py in graphcore/examples)
    return run([sys.executable, "-m", "ipu_tutorials.poprun", "--mpi-global-args", "--tag-output",
                "--num-replicas", "4", "--num-instances", "2", "python", str(PROGRAM),
                str(out_dir), *program_args],
               {"IPU_TUTORIALS_INSTANCE_TIMEOUT": "60", **(env or {})})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def plain_pytorch_weights() -> dict:
    """The same global batches trained by a plain PyTorch loop: the mean over A x R micro-batches."""
    torch.manual_seed(0)
    model = train_replicas.Model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    d, a, r, micro = train_replicas.D, train_replicas.A, 4, train_replicas.MICRO
    for x, y in train_replicas.global_batches(r):
        xs, ys = x.reshape(d, a * r, micro, -1), y.reshape(d, a * r, micro)
        for step in range(d):
            optimizer.zero_grad()
            for m in range(a * r):
                (model(xs[step, m], ys[step, m])[1] / (a * r)).backward()
            optimizer.step()
    return model.state_dict()


def one_process_weights(tmp_path: Path) -> dict:
    torch.manual_seed(0)
    train_replicas.main(str(tmp_path), None, 4, "Mean")
    return torch.load(tmp_path / "weights-0.pt")


def assert_same(a: dict, b: dict):
    for name in a:
        torch.testing.assert_close(a[name], b[name], atol=1e-5, rtol=1e-5)


def test_two_instances_of_two_replicas_train_like_one_process_of_four_and_pytorch(tmp_path):
    result = poprun(tmp_path)
    assert result.returncode == 0, result.stdout
    assert "[1,0]: saved" in result.stdout and "[1,1]: saved" in result.stdout
    first, second = (torch.load(tmp_path / f"weights-{i}.pt") for i in (0, 1))
    assert_same(first, second)
    reference = tmp_path / "one"
    reference.mkdir()
    assert_same(first, one_process_weights(reference))
    assert_same(first, plain_pytorch_weights())


def test_killing_an_instance_ends_the_other_with_an_error_naming_it(tmp_path):
    result = poprun(tmp_path, "--die-at", "1")
    assert result.returncode == 1
    assert "poprun: instance 1 ended (killed by signal 9" in result.stdout
    survivor = [line for line in result.stdout.splitlines()
                if line.startswith("[1,0]") and "InstanceError" in line]
    assert survivor and "instance(s) 1 exited" in survivor[-1], result.stdout
    assert not (tmp_path / "weights-0.pt").exists()


def test_instances_with_different_options_are_stopped_at_compile(tmp_path):
    result = poprun(tmp_path, env={"MISMATCH": "1"})
    assert result.returncode == 1
    assert "the instances compiled different configurations" in result.stdout
    assert "gradientAccumulation: instance 0 has 2, instance 1 has 3" in result.stdout
    assert "step 0 done" not in result.stdout


@pytest.mark.parametrize("own_init", ["", "1"], ids=["joined-by-ipu-tutorials", "own-init"])
def test_configure_process_id_without_poprun_trains_like_one_process(tmp_path, own_init):
    env = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()),
           "IPU_TUTORIALS_INSTANCE_TIMEOUT": "60", "PYTHONPATH": str(ROOT), "OWN_INIT": own_init}
    command = [sys.executable, str(PROGRAM), str(tmp_path), "--replicas", "2"]
    processes = [subprocess.Popen(command, cwd=ROOT, start_new_session=True,
                                  env={**os.environ, **env, "MANUAL_INSTANCE": f"{i} 2"},
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                 for i in range(2)]
    try:
        outputs = [p.communicate(timeout=BOUND)[0] for p in processes]
    finally:
        for p in processes:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    assert [p.returncode for p in processes] == [0, 0], outputs
    first, second = (torch.load(tmp_path / f"weights-{i}.pt") for i in (0, 1))
    assert_same(first, second)
    assert_same(first, plain_pytorch_weights())


def test_an_instance_that_never_joins_is_named_after_the_timeout(tmp_path):
    env = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()),
           "IPU_TUTORIALS_INSTANCE_TIMEOUT": "5", "MANUAL_INSTANCE": "0 2"}
    result = run([sys.executable, str(PROGRAM), str(tmp_path), "--replicas", "2"], env)
    assert result.returncode == 1
    assert "instance(s) 1 of 2 never joined the run within 5 s" in result.stdout


def test_mnist_pipeline_runs_unchanged_under_poprun():
    result = run([sys.executable, "-m", "ipu_tutorials.poprun", "--num-instances", "2",
                  "--num-replicas", "2", "python", "mnist_pipeline.py", "--dataset", "embedded",
                  "--epochs", "1", "--device-iterations", "2", "--replication-factor", "2",
                  "--no-progress"])
    assert result.returncode == 0, result.stdout
    for instance in (0, 1):  # each instance: half of the digits, one of the two replicas
        assert (f"[1,{instance}]: Note: poprun decides the replicas: 1 in this instance, 2 in "
                f"all; --replication-factor ignored" in result.stdout)
        assert (f"[1,{instance}]: Training for 1 epoch (pipelined); each epoch is 2 call(s) "
                f"of 800 images" in result.stdout)
        assert re.search(rf"\[1,{instance}\]: Accuracy on test set: \d+\.\d\d%", result.stdout)
