"""The private Lightning hooks this integration relies on, checked against the tested versions.

Lightning 2.3 removed its IPU support, and its `_AcceleratorConnector` picks DDP for several
devices of an accelerator it does not know. Lightning 2.1-2.2 chose the IPU strategy and
precision inside the connector; these patches put that choice back, and nothing else.
"""
from __future__ import annotations

import functools

import lightning
from lightning.pytorch.trainer.connectors import data_connector
from lightning.pytorch.trainer.connectors.accelerator_connector import _AcceleratorConnector

TESTED = ((2, 6), (2, 7))  # lightning >= 2.6, < 2.7: the range this integration was tested with


def _version_tuple(text: str) -> tuple[int, int]:
    major, minor = text.split(".")[:2]
    return int(major), int("".join(c for c in minor if c.isdigit()) or 0)


def check_version(version: str = lightning.__version__) -> None:
    """Refuse a Lightning outside the tested range, whose private connector may differ.

    Raises:
        ImportError: naming the installed and the supported versions.
    """
    low, high = TESTED
    if not low <= _version_tuple(version) < high:
        raise ImportError(
            f"ipu_tutorials.lightning was tested with lightning>={low[0]}.{low[1]},"
            f"<{high[0]}.{high[1]} and relies on its private `_AcceleratorConnector` to choose the "
            f"IPU strategy; lightning {version} is installed. Install a tested version: "
            f"pip install -e \".[lightning]\"")


def install(strategy_cls, precision_cls, accelerator_cls) -> None:
    """Make `accelerator="ipu"` choose `strategy_cls` and `precision_cls`, like Lightning 2.1-2.2."""
    if getattr(_AcceleratorConnector, "_ipu_tutorials_patched", False):
        return
    choose_strategy = _AcceleratorConnector._choose_strategy
    init_precision = _AcceleratorConnector._check_and_init_precision

    def is_ipu(connector) -> bool:
        flag = connector._accelerator_flag
        return flag == "ipu" or isinstance(flag, accelerator_cls)

    @functools.wraps(choose_strategy)
    def _choose_strategy(self):
        return strategy_cls.strategy_name if is_ipu(self) else choose_strategy(self)

    @functools.wraps(init_precision)
    def _check_and_init_precision(self):
        if isinstance(self.strategy, strategy_cls) and self._precision_plugin_flag is None:
            # IPUStrategy(precision_plugin=...) wins over Trainer(precision=...)
            return self.strategy._precision_plugin or precision_cls(self._precision_flag)
        return init_precision(self)

    _AcceleratorConnector._choose_strategy = _choose_strategy
    _AcceleratorConnector._check_and_init_precision = _check_and_init_precision
    _AcceleratorConnector._ipu_tutorials_patched = True


class KeepPoptorchLoaders:
    """While active, Lightning's re-instantiation of dataloaders (done for prediction, to track
    sample indices) leaves a user's poptorch.DataLoader alone, as real Lightning's IPU code did."""

    def __init__(self, poptorch_loader_cls):
        self.loader_cls = poptorch_loader_cls
        self.original = None

    def __enter__(self):
        self.original = original = data_connector._update_dataloader
        loader_cls = self.loader_cls

        def _update_dataloader(dataloader, *args, **kwargs):
            if isinstance(dataloader, loader_cls):
                return dataloader
            return original(dataloader, *args, **kwargs)

        data_connector._update_dataloader = _update_dataloader
        return self

    def __exit__(self, *exc):
        if self.original is not None:
            data_connector._update_dataloader = self.original
            self.original = None
