"""Lightning 2.0.9's IPU modules, answered by ipu_tutorials.lightning, for its test suite.

Lightning 2.0.9 kept IPUAccelerator, IPUStrategy and IPUPrecisionPlugin in
`lightning.pytorch.{accelerators,strategies,plugins.precision}.ipu`; the installed Lightning
(2.6) has none of them. peer_alias maps those three module names here, and `install()` puts the
classes where 2.0.9's tests import them from, plus 2.0.9's `_RunIf(ipu=True)`.
"""
from __future__ import annotations

import sys
import warnings

import pytest

from ipu_tutorials.lightning import IPUAccelerator, IPUPrecisionPlugin, IPUStrategy, _auto

_POPTORCH_AVAILABLE = True
_IPU_AVAILABLE = True  # 2.0.9's flag; its tests monkeypatch it, so it drives the opt-in below

__all__ = ["IPUAccelerator", "IPUPrecisionPlugin", "IPUStrategy", "install"]


def _RunIf(*, ipu: bool = False, hpu: bool = False, **kwargs):  # noqa: N802 (2.0.9's name)
    """2.0.9's test marker: 2.6's conditions plus `ipu` (always met here) and `hpu` (never)."""
    from lightning.pytorch.utilities.testing._runif import _runif_reasons
    reasons, marker_kwargs = _runif_reasons(**kwargs)
    if hpu:
        reasons.append("HPU")
    if ipu:
        marker_kwargs["ipu"] = True
    return pytest.mark.skipif(condition=bool(reasons), reason=f"Requires: [{' + '.join(reasons)}]",
                              **marker_kwargs)


def _offered() -> bool:
    return bool(sys.modules[__name__]._IPU_AVAILABLE)


def install() -> None:
    """Put the IPU classes and modules where Lightning 2.0.9 exported them."""
    import lightning.pytorch.plugins.precision as precision
    import lightning.pytorch.accelerators as accelerators
    import lightning.pytorch.plugins as plugins
    import lightning.pytorch.strategies as strategies
    import lightning.pytorch.utilities.testing as testing
    accelerators.IPUAccelerator = IPUAccelerator
    strategies.IPUStrategy = IPUStrategy
    plugins.IPUPrecisionPlugin = IPUPrecisionPlugin
    testing._RunIf = _RunIf
    this = sys.modules[__name__]
    accelerators.ipu = strategies.ipu = precision.ipu = this
    _auto.ipus_offered = _offered  # 2.0.9's "IPUs present" is ipu_tutorials' opt-in
    _old_names()
    _pytest_warns_none()


def _old_names() -> None:
    """Names 2.0.9's test helpers import that 2.6 dropped (all true of the installed torch)."""
    import lightning.fabric.utilities.imports as fabric_imports
    for flag in ("_TORCH_GREATER_EQUAL_1_12", "_TORCH_GREATER_EQUAL_1_13", "_TORCH_GREATER_EQUAL_2_0"):
        setattr(fabric_imports, flag, True)
    import lightning.pytorch.utilities as utilities
    import lightning.pytorch.utilities.imports as pytorch_imports
    from lightning.pytorch.utilities.testing._runif import _OMEGACONF_AVAILABLE
    utilities._OMEGACONF_AVAILABLE = _OMEGACONF_AVAILABLE
    pytorch_imports._LIGHTNING_COLOSSALAI_AVAILABLE = False


def _pytest_warns_none() -> None:
    """`pytest.warns(None)` (record every warning), which 2.0.9's tests use and pytest 8 removed."""
    warns = pytest.warns

    def compatible_warns(expected_warning=Warning, *args, **kwargs):
        if expected_warning is None:
            recorder = warnings.catch_warnings(record=True)
            return _Recorded(recorder)
        return warns(expected_warning, *args, **kwargs)

    pytest.warns = compatible_warns


class _Recorded:
    def __init__(self, recorder):
        self.recorder = recorder

    def __enter__(self):
        records = self.recorder.__enter__()
        warnings.simplefilter("always")
        return records

    def __exit__(self, *exc):
        return self.recorder.__exit__(*exc)
