"""PyTorch Lightning on simulated IPUs: IPUAccelerator, IPUStrategy and IPUPrecisionPlugin.

Importing this package registers the accelerator "ipu" and the strategy "ipu_strategy" in the
installed `lightning`, and makes `Trainer(accelerator="ipu")` choose them, as Lightning 2.0
did with real IPUs. Lightning's IPU code examples run with one import changed:
`from lightning.pytorch.strategies import IPUStrategy` becomes
`from ipu_tutorials.lightning import IPUStrategy`.
"""
from ._compat import check_version

check_version()

from lightning.pytorch.accelerators import AcceleratorRegistry  # noqa: E402
from lightning.pytorch.strategies import StrategyRegistry  # noqa: E402

from . import _auto, _compat  # noqa: E402
from ._steps import RealIPUWarning  # noqa: E402
from .accelerator import IPUAccelerator  # noqa: E402
from .precision import IPUPrecision, IPUPrecisionPlugin  # noqa: E402
from .strategy import IPUStrategy  # noqa: E402

__all__ = ["IPUAccelerator", "IPUPrecision", "IPUPrecisionPlugin", "IPUStrategy", "RealIPUWarning",
           "register"]


def register() -> None:
    """Register "ipu" and "ipu_strategy" (done on import; calling it again does nothing)."""
    if "ipu" not in AcceleratorRegistry:
        AcceleratorRegistry.register("ipu", IPUAccelerator,
                                     description="Simulated Graphcore IPUs (ipu_tutorials)")
    if IPUStrategy.strategy_name not in StrategyRegistry:
        IPUStrategy.register_strategies(StrategyRegistry)
    _compat.install(IPUStrategy, IPUPrecisionPlugin, IPUAccelerator)
    _auto.install(IPUStrategy, IPUAccelerator)


register()
