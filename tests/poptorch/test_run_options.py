"""_run_options.py: the options of the device and the run (seed, offline target, logs, checks)."""
import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.poptorch._options_dict import from_flat


def test_offline_target_means_never_connect():
    opts = poptorch.Options().useOfflineIpuTarget(2)
    assert opts.connection_type == poptorch.ConnectionType.Never
    assert opts.ipu_version == 2


def test_random_seed_also_seeds_torch():
    poptorch.Options().randomSeed(42)
    first = torch.rand(3)
    torch.manual_seed(42)
    assert torch.equal(first, torch.rand(3))


def test_relax_optimizer_attributes_checks_is_off_by_default_and_takes_a_bool():
    opts = poptorch.Options()
    assert opts._value("relax_optimizer_checks") is False  # PopTorch keeps it private
    assert opts.relaxOptimizerAttributesChecks() is opts
    assert opts._value("relax_optimizer_checks") is True
    assert opts.relaxOptimizerAttributesChecks(False)._value("relax_optimizer_checks") is False
    with pytest.raises(AssertionError,
                       match=r"relaxOptimizerAttributesChecks\(\) expects True or False"):
        opts.relaxOptimizerAttributesChecks("yes")


def test_max_repeat_logs_is_declared_once_and_reaches_every_derived_place(tmp_path):
    """Added as one declaration and its setter (docs/architecture.md shows it)."""
    opts = poptorch.Options()
    assert opts.max_repeat_logs == 4  # PopTorch's default
    assert opts.maxRepeatLogs(None) is opts and opts.max_repeat_logs == 2**64 - 1  # no limit
    assert opts.toDict()["max_repeat_logs"] == 2**64 - 1
    assert from_flat(poptorch.Options, opts.toDict()).max_repeat_logs == 2**64 - 1
    with pytest.raises(ValueError, match=r"maxRepeatLogs\(\) must be an integer >= 0, got -1"):
        opts.maxRepeatLogs(-1)
    with pytest.raises(AssertionError, match=r"Unexpected type <class 'str'> for option "
                                             r"max_repeat_logs"):
        opts.set(max_repeat_logs="8")
    (tmp_path / "o.conf").write_text("maxRepeatLogs(8)\n")
    assert opts.loadFromFile(str(tmp_path / "o.conf")).max_repeat_logs == 8
