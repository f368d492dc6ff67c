"""Importing ipu_tutorials.lightning registers "ipu" and "ipu_strategy" in Lightning, once."""
import pytest

pl = pytest.importorskip("lightning.pytorch")

import ipu_tutorials.lightning as ipu_lightning  # noqa: E402
from lightning.pytorch.accelerators import AcceleratorRegistry  # noqa: E402
from lightning.pytorch.strategies import StrategyRegistry  # noqa: E402


def test_the_accelerator_and_the_strategy_are_registered_once():
    assert AcceleratorRegistry["ipu"]["accelerator"] is ipu_lightning.IPUAccelerator
    assert StrategyRegistry["ipu_strategy"]["strategy"] is ipu_lightning.IPUStrategy
    before = (len(AcceleratorRegistry), len(StrategyRegistry))
    ipu_lightning._register()
    assert (len(AcceleratorRegistry), len(StrategyRegistry)) == before
    assert not hasattr(ipu_lightning, "IPUPrecision")  # lightning-graphcore's name, not 2.0.9's
