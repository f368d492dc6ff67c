"""Registration by name, the strategy the Trainer picks, and the device count."""
import pytest

import lightning.pytorch as pl
from lightning.pytorch.accelerators import AcceleratorRegistry
from lightning.pytorch.strategies import StrategyRegistry

import ipu_tutorials.lightning as ipu_lightning
from ipu_tutorials.lightning import IPUAccelerator, IPUStrategy
from ipu_tutorials.lightning._compat import check_version


def test_importing_registers_the_names():
    assert AcceleratorRegistry["ipu"]["accelerator"] is IPUAccelerator
    assert StrategyRegistry["ipu_strategy"]["strategy"] is IPUStrategy
    ipu_lightning._register()  # a second registration is harmless


def test_bare_ipu_trainer_picks_the_ipu_strategy_not_ddp(trainer_kwargs):
    # Lightning 2.0's IPU documentation: Trainer(accelerator="ipu", devices=8, precision=16)
    trainer = pl.Trainer(**trainer_kwargs, devices=8, precision=16)
    assert isinstance(trainer.strategy, IPUStrategy)
    assert isinstance(trainer.accelerator, IPUAccelerator)
    assert trainer.num_devices == 8 and trainer.strategy.replication_factor == 8


def test_auto_devices_is_four_the_unit_ipus_ship_in(trainer_kwargs):
    assert pl.Trainer(**trainer_kwargs, devices="auto").num_devices == 4


def test_strategy_by_name_and_instance_with_accelerator_ipu(trainer_kwargs):
    by_name = pl.Trainer(**trainer_kwargs, devices=2, strategy="ipu_strategy")
    assert isinstance(by_name.strategy, IPUStrategy) and by_name.num_devices == 2
    instance = IPUStrategy(autoreport_dir="report_dir/")
    assert pl.Trainer(**trainer_kwargs, devices=2, strategy=instance).strategy is instance


def test_other_accelerators_are_untouched(trainer_kwargs):
    trainer = pl.Trainer(**{**trainer_kwargs, "accelerator": "cpu"}, devices=1)
    assert not isinstance(trainer.strategy, IPUStrategy)


def test_devices_must_be_a_count():
    with pytest.raises(Exception, match=r"count of replicas, not a list of ids"):
        IPUAccelerator.parse_devices([0, 1])
    assert IPUAccelerator.parse_devices("8") == 8
    assert IPUAccelerator.get_parallel_devices(2) == [0, 1]


@pytest.mark.parametrize("version", ["2.2.5", "2.7.0", "3.0.1"])
def test_lightning_outside_the_tested_range_is_refused(version):
    with pytest.raises(ImportError, match=rf"tested with lightning>=2\.6,<2\.7.*lightning {version} is installed"):
        check_version(version)


def test_tested_versions_pass():
    check_version("2.6.6")
    check_version("2.6.0rc1")
