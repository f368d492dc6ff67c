"""Nothing read from a file or a peer runs code: checkpoints, options files, peer records."""
import json
import os
import pickle

import pytest
import torch

from ipu_tutorials import poptorch, rendezvous
from ipu_tutorials.atomic_io import FileFormatError
from ipu_tutorials.trusted_load import allowed, load_trusted
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


def test_only_imported_modules_and_safe_kinds_of_class_are_allowed():
    assert allowed("torch.nn.modules.linear.Linear") is torch.nn.Linear
    assert allowed("ipu_tutorials.poptorch.options.Options") is poptorch.Options
    assert allowed("collections.OrderedDict") is not None
    assert allowed("posix.system") is None and allowed("builtins.eval") is None
    assert allowed("ipu_tutorials.poptorch.executor.PoplarExecutor") is None  # not plain data
    assert allowed("never_imported_module.Model") is None  # naming it must not import it
    assert allowed("torch.nn.Linear.__init__") is None


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


def test_options_files_in_json_and_toml_are_read_with_a_parser(tmp_path):
    (tmp_path / "o.json").write_text(json.dumps({"deviceIterations": 4,
                                                 "Training.gradientAccumulation": 2,
                                                 "outputMode": "OutputMode.All"}))
    (tmp_path / "o.toml").write_text('deviceIterations = 4\n"Training.gradientAccumulation" = 2\n'
                                     'outputMode = "OutputMode.All"\n')
    for name in ("o.json", "o.toml"):
        opts = poptorch.Options().loadFromFile(str(tmp_path / name))
        assert (opts.device_iterations, opts.Training.gradient_accumulation,
                opts.output_mode) == (4, 2, poptorch.OutputMode.All)
    (tmp_path / "bad.json").write_text(json.dumps({"__class__.__init__": []}))
    with pytest.raises(ValueError, match="private attribute '__class__'"):
        poptorch.Options().loadFromFile(str(tmp_path / "bad.json"))
    (tmp_path / "bad.toml").write_text("deviceIterations = [\n")
    with pytest.raises(FileFormatError, match=r"bad.toml is not a valid TOML options file"):
        poptorch.Options().loadFromFile(str(tmp_path / "bad.toml"))


def test_options_json_in_the_environment_is_bounded(monkeypatch):
    monkeypatch.setenv("POPTORCH_DEFAULT_OPTIONS", "[" * 100_000)
    with pytest.raises(ValueError, match="options JSON is (not valid JSON|nested too deeply)"):
        poptorch.Options()


# --- peer records: signed with the run's secret ---------------------------------------------------
SECRET = "s" * 64


def test_a_record_signed_with_the_secret_is_read_back():
    assert rendezvous.verify(SECRET, rendezvous.sign(SECRET, {"host": "a", "pid": 1}), "x") == \
        {"host": "a", "pid": 1}


@pytest.mark.parametrize("record", [
    rendezvous.sign("t" * 64, {"host": "a", "pid": 1}),  # another secret
    b'{"body": "{\\"host\\": \\"a\\", \\"pid\\": 1}", "mac": "00"}',  # forged
    b"a 1",  # the old unsigned format
    pickle.dumps({"host": "a"}),  # a pickle
    b"[" * 100_000,  # nested
])
def test_a_record_without_the_secret_is_refused(record):
    with pytest.raises(rendezvous.RendezvousError, match=r"refused instance 1: its record is not "
                                                         r"signed with this run's secret"):
        rendezvous.verify(SECRET, record, "instance 1")


def test_a_secret_file_must_be_private_and_long_enough(tmp_path, monkeypatch):
    path = tmp_path / "secret"
    path.write_text(SECRET)
    monkeypatch.delenv(rendezvous.SECRET_ENV, raising=False)
    monkeypatch.setenv(rendezvous.SECRET_FILE_ENV, str(path))
    path.chmod(0o644)
    with pytest.raises(rendezvous.RendezvousError, match=r"can be read by other users \(mode "
                                                         r"644\); run `chmod 600"):
        rendezvous.secret_from_environment(required=True)
    path.chmod(0o600)
    assert rendezvous.secret_from_environment(required=True) == SECRET
    path.write_text("short")
    with pytest.raises(rendezvous.RendezvousError, match="has 5 characters; use at least 16"):
        rendezvous.secret_from_environment(required=True)


def test_several_hosts_need_a_secret(monkeypatch):
    monkeypatch.delenv(rendezvous.SECRET_ENV, raising=False)
    monkeypatch.delenv(rendezvous.SECRET_FILE_ENV, raising=False)
    assert rendezvous.secret_from_environment(required=False) is None
    with pytest.raises(rendezvous.RendezvousError, match="instances on several hosts must share "
                                                         "a secret: set IPU_TUTORIALS_RDZV_SECRET"):
        rendezvous.secret_from_environment(required=True)
