"""The log a compile writes at INFO and DEBUG, and PopTorch's anchor-mode lines."""
import pytest
import torch

from ipu_tutorials import poptorch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(10, 10), torch.nn.Linear(10, 10)

    def forward(self, x, labels):
        out = self.fc2(torch.relu(self.fc1(x)))
        return out, torch.nn.functional.mse_loss(out, labels)


@pytest.fixture
def log_level():
    yield poptorch.setLogLevel
    poptorch.setLogLevel("WARN")


def compile_with(opts: poptorch.Options) -> None:
    opts.showCompilationProgressBar(False)
    poptorch.trainingModel(Model(), opts)(torch.rand(10, 10), torch.rand(10, 10))


def test_info_reports_the_compiled_model_its_fullest_ipu_and_its_speed(log_level, capsys):
    log_level("INFO")
    compile_with(poptorch.Options())
    err = capsys.readouterr().err
    assert "[poptorch:python] [info] Compiled training model Model: pipelined on 1 IPU(s)" in err
    assert "the fullest IPU is IPU 0" in err and "samples/s" in err
    assert "[debug]" not in err


def test_warn_is_quiet(log_level, capsys):
    log_level("WARN")
    compile_with(poptorch.Options())
    assert capsys.readouterr().err == ""


# was wrong: the Sum anchor was logged "SUM/1"; PopTorch writes "Sum/1" (outputModeToString)
@pytest.mark.parametrize("mode, period, expected", [  # PopTorch's debug_tensors_test
    (poptorch.OutputMode.All, 3, "ALL/1"), (poptorch.OutputMode.EveryN, 4, "EVERYN/4"),
    (poptorch.OutputMode.Final, 1, "FINAL/1"), (poptorch.OutputMode.Sum, 1, "Sum/1")])
def test_debug_lists_each_anchor_with_its_mode(log_level, capsys, mode, period, expected):
    log_level("DEBUG")
    opts = poptorch.Options()
    opts.anchorTensor("grad_bias", "Gradient___fc2.bias", mode, period)
    compile_with(opts)
    err = capsys.readouterr().err
    assert f"Gradient___fc2.bias {expected}" in err
    assert "[debug] Placement: stage 0  IPU 0" in err


def test_an_anchor_without_a_mode_takes_the_models_output_mode(log_level, capsys):
    log_level("DEBUG")
    opts = poptorch.Options().outputMode(poptorch.OutputMode.All)
    opts.anchorTensor("grad_bias", "Gradient___fc2.bias")
    compile_with(opts)
    assert "Gradient___fc2.bias ALL/1" in capsys.readouterr().err
