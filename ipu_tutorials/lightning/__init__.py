"""PyTorch Lightning on simulated IPUs: IPUAccelerator, IPUStrategy and IPUPrecisionPlugin.

Importing this package registers the accelerator "ipu" and the strategy "ipu_strategy" in the
installed `lightning`, and makes `Trainer(accelerator="ipu")` choose them, as Lightning 2.0
did with real IPUs. Lightning's IPU code examples run with one import changed:
`from lightning.pytorch.strategies import IPUStrategy` becomes
`from ipu_tutorials.lightning import IPUStrategy`. The package's names are Lightning 2.0.9's
IPU classes (tests/peer/manifests/lightning-2.0.9.json) and one simulator extra,
`RealIPUWarning`, served by `__getattr__` (ipu_tutorials/support/extras.py).
"""
from ._compat import check_version as _check_version

_check_version()

from lightning.pytorch.accelerators import AcceleratorRegistry as _AcceleratorRegistry  # noqa: E402
from lightning.pytorch.strategies import StrategyRegistry as _StrategyRegistry  # noqa: E402

from ..support import extras as _extras  # noqa: E402
from . import _auto, _compat  # noqa: E402
from ._steps import RealIPUWarning as _RealIPUWarning  # noqa: E402
from .accelerator import IPUAccelerator  # noqa: E402
from .precision import IPUPrecisionPlugin  # noqa: E402
from .strategy import IPUStrategy  # noqa: E402

__all__ = ["IPUAccelerator", "IPUPrecisionPlugin", "IPUStrategy"]

# The simulator's extra: the warning a step gives where real IPUs would refuse (docs/lightning.md)
_SERVED = {"RealIPUWarning": _RealIPUWarning}
__getattr__ = _extras.module_getattr("lightning.pytorch.strategies.ipu", _SERVED)


def __dir__() -> list[str]:
    return sorted([*globals(), *_SERVED])


def _register() -> None:
    """Register "ipu" and "ipu_strategy" (done on import; calling it again does nothing)."""
    if "ipu" not in _AcceleratorRegistry:
        _AcceleratorRegistry.register("ipu", IPUAccelerator,
                                      description="Simulated Graphcore IPUs (ipu_tutorials)")
    if IPUStrategy.strategy_name not in _StrategyRegistry:
        IPUStrategy.register_strategies(_StrategyRegistry)
    _compat.install(IPUStrategy, IPUPrecisionPlugin, IPUAccelerator)
    _auto.install(IPUStrategy, IPUAccelerator)


_register()

# Lightning 2.0.9 has no lightning.pytorch.accelerator, .precision or .strategy: the facade's
# own modules are imported by their full path, never read as names of the package.
for _module in ("accelerator", "precision", "strategy"):
    globals().pop(_module, None)
del _module
