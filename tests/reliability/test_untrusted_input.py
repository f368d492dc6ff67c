"""Nothing read from a file or a peer runs code: checkpoints, options files, peer records."""
import os
import pickle

import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.support.atomic_io import FileFormatError
from ipu_tutorials.support.trusted_load import load_trusted
from ipu_tutorials.tutorial.models import Regression


class RunsCode:
    """Unpickling this calls `target` (an attacker's payload)."""

    def __init__(self, target):
        self.target = target

    def __reduce__(self):
        return self.target


def _marker(tmp_path):
    return tmp_path / "pwned"


def test_a_checkpoint_that_would_run_a_command_is_refused(tmp_path):
    marker = _marker(tmp_path)
    path = tmp_path / "evil.poptorch"
    torch.save({"training": True, "options": None, "optimizer": None, "example": ((), {}),
                "rng_state": None, "model": RunsCode((os.system, (f"touch {marker}",)))}, path)
    for load in (poptorch.load, poptorch.inferenceModel(Regression()).loadExecutable):
        with pytest.raises(FileFormatError, match=r"evil.poptorch would call posix.system when "
                                                  r"loaded, which ipu_tutorials refuses"):
            load(str(path))
    assert not marker.exists()


@pytest.mark.parametrize("target", [(eval, ("1",)), (exec, ("x = 1",)),
                                    (__import__, ("subprocess",))], ids=["eval", "exec", "import"])
def test_builtins_that_run_code_are_refused(tmp_path, target):
    path = tmp_path / "evil.pt"
    torch.save([RunsCode(target)], path)
    with pytest.raises(FileFormatError, match=r"would call builtins\."):
        load_trusted(path)


def test_a_plain_pickle_is_refused_without_running_it(tmp_path):
    marker = _marker(tmp_path)
    path = tmp_path / "evil.pt"
    path.write_bytes(pickle.dumps(RunsCode((os.system, (f"touch {marker}",)))))
    with pytest.raises(FileFormatError, match="evil.pt is not a readable"):
        load_trusted(path)
    assert not marker.exists()


class TwoBlocks(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = poptorch.BeginBlock(torch.nn.Linear(4, 4), "A", ipu_id=0)
        self.b = poptorch.BeginBlock(torch.nn.Linear(4, 2), "B", ipu_id=1)

    def forward(self, x):
        return self.b(self.a(x))


def test_a_model_annotated_with_begin_block_loads_back(tmp_path):
    # was wrong: BeginBlock's hook objects were refused by the weights-only load
    opts = poptorch.Options().setExecutionStrategy(poptorch.ShardedExecution("A", "B"))
    model = poptorch.inferenceModel(TwoBlocks(), opts)
    x = torch.randn(2, 4)
    model.compileAndExport(str(tmp_path / "m.poptorch"), x)
    torch.testing.assert_close(poptorch.load(str(tmp_path / "m.poptorch"))(x), model(x))


def test_a_saved_model_loads_back_weights_only(tmp_path):
    net = Regression()
    model = poptorch.trainingModel(net, optimizer=poptorch.optim.SGD(net.parameters(), lr=0.1,
                                                                     momentum=0.9))
    for _ in range(2):  # momentum state exists: the optimizer's state dict is not empty
        model(torch.randn(4, 5), torch.randn(4, 3))
    model.save(str(tmp_path / "m.poptorch"))
    model.destroy()
    loaded = poptorch.load(str(tmp_path / "m.poptorch"))
    torch.testing.assert_close(loaded.model.fc.weight, net.fc.weight)
    assert loaded._optimizer.state  # the momentum buffers came back
    torch.testing.assert_close(next(iter(loaded._optimizer.state.values()))["momentum_buffer"],
                               next(iter(model._optimizer.state.values()))["momentum_buffer"])


# --- options files: parsed, never evaluated -------------------------------------------------------
@pytest.mark.parametrize("line, message", [
    ("deviceIterations(torch.load('x.pt', weights_only=False))", r"unknown name 'torch.load'"),
    ("deviceIterations(__import__('os').system('touch pwned'))", r"private attribute"),
    ("deviceIterations(open('pwned', 'w'))", r"unknown name|cannot read|only poptorch classes"),
    ("setExecutionStrategy(poptorch.OutputMode.__class__.__subclasses__())", r"private"),
    ("__class__.__init__()", r"private attribute '__class__'"),
    ("_values.clear()", r"private attribute '_values'"),
    ("deviceIterations(2).__class__()", r"unknown option method '__class__'"),
    ("deviceIterations(torch.save(1, 'x'))", r"unknown name 'torch.save'"),
    ("deviceIterations(poptorch.OutputMode.All.value.__add__(1))", r"private"),
])
def test_an_options_file_cannot_reach_code(tmp_path, line, message):
    path = tmp_path / "options.conf"
    path.write_text(line + "\n")
    with pytest.raises(ValueError, match=message):
        poptorch.Options().loadFromFile(str(path))
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "x").exists()
