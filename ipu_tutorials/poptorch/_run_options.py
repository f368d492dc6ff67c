"""The options of the device and the run: which IPU, when to attach, seeds, logs, profiling.

`_RunOptions` is the part of poptorch.Options (a base class of it) that says where and how
a model runs rather than how it is batched or placed; each option is declared once.
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from ._checks import check_bool, check_int, check_str, one_of
from ._declared import Option, _OptionGroup, enum_value
from ._option_rules import check_version
from .enums import ConnectionType, SyncPattern

if TYPE_CHECKING:
    from typing_extensions import Self  # the Options: each setter returns them


def _optional_str(where: str, value) -> str | None:
    return None if value is None else check_str(where, value)


def _seed(where: str, seed) -> int:
    check_int(where, seed, minimum=0)
    if seed >= 2**64:
        raise ValueError(f"{where} must be below 2**64 (torch's seed range), got {seed}")
    return seed


def _repeat_limit(where: str, max_lines) -> int:
    """PopTorch stores "no limit" (None) as 2**64 - 1."""
    return 2**64 - 1 if max_lines is None else check_int(where, max_lines, minimum=0)


def _cache_entries(path: str) -> dict:
    """PopTorch passes the executable cache to PopART as two options."""
    return {"cachePath": path, "enableEngineCaching": True}


class _RunOptions(_OptionGroup):
    """poptorch.Options' settings of the device and the run (its setters return the Options)."""

    # PopTorch keeps the first ones in its options dict (the enums as their ints; the
    # optional ones appear when their setter runs); it sends the others (held=None) to PopART
    # or keeps them in private fields, so the facade reads them with `_value(name)`.
    connection_type = Option(ConnectionType.Always, setter="connectionType",
                             check=one_of(ConnectionType), held=enum_value)
    sync_pattern = Option(SyncPattern.Full, setter="syncPattern", check=one_of(SyncPattern),
                          held=enum_value)
    random_seed = Option(None, setter="randomSeed", check=_seed,  # RunSpec.rounding's seed
                         optional=True)
    ipu_model = Option(False, setter="useIpuModel", check=check_bool, key="use_model",
                       optional=True)
    ipu_version = Option(None, setter="useOfflineIpuTarget",  # RunSpec.system's chip
                         check=lambda where, version: check_version(version), optional=True)
    ipu_id = Option(None, setter="useIpuId", check=functools.partial(check_int, minimum=0),
                    optional=True)
    log_dir = Option(".", setter="logDir", check=check_str)
    max_repeat_logs = Option(4, setter="maxRepeatLogs", check=_repeat_limit)
    model_name = Option(None, setter="modelName", check=check_str, optional=True)
    enable_synthetic_data = Option(False, setter="enableSyntheticData", check=check_bool,
                                   spec="synthetic_data", held=None)
    log_cycle_count = Option(False, setter="logCycleCount", check=check_bool, held=None)
    profile_dir = Option(None, setter="enableProfiling", check=_optional_str, held=None)
    show_compilation_progress_bar = Option(True, setter="showCompilationProgressBar",
                                           check=check_bool, held=None)
    executable_cache_dir = Option(None, setter="enableExecutableCaching", check=_optional_str,
                                  to_flat=_cache_entries, flat_keys=("cachePath", "enableEngineCaching"),
                                  from_flat=lambda flat: flat.get("cachePath"), held=None)
    relax_optimizer_checks = Option(False, setter="relaxOptimizerAttributesChecks",
                                    check=check_bool, held=None)

    def randomSeed(self, random_seed: int) -> Self:
        """Seed the device's random numbers (and, as PopTorch does, torch's on the host).

        Args:
            random_seed: an integer from 0 to 2**64 - 1.
        """
        import torch

        self._set(random_seed=random_seed)
        torch.manual_seed(random_seed)
        return self

    def useIpuModel(self, use_model: bool) -> Self:
        """Run on Poplar's IPU Model instead of hardware; recorded (everything is simulated
        here). It overrides the POPTORCH_IPU_MODEL environment variable.

        Args:
            use_model: True or False.
        """
        return self._set(ipu_model=use_model)

    def useOfflineIpuTarget(self, ipu_version: int = 2) -> Self:
        """Compile for an IPU that is not attached: the model compiles but refuses to run,
        and the connection type becomes `ConnectionType.Never`, as in PopTorch.

        Args:
            ipu_version: 1 (Mk1), 2 (Mk2, the default) or 21 (Mk2 with FP8); an unknown
                version raises ValueError listing the known ones.
        """
        return self._set(ipu_version=ipu_version, connection_type=ConnectionType.Never)

    def connectionType(self, connection_type: ConnectionType) -> Self:
        """When to attach to the IPU: `Always` (default), `OnDemand` (when the model first
        runs) or `Never` (compile only).

        Args:
            connection_type: a `poptorch.ConnectionType`.
        """
        return self._set(connection_type=connection_type)

    def syncPattern(self, sync_pattern: SyncPattern) -> Self:
        """How IPUs synchronise with the host and each other; recorded, not simulated.

        Args:
            sync_pattern: `SyncPattern.Full` (default), `SinglePipeline` or `ReplicaAndLadder`.
        """
        return self._set(sync_pattern=sync_pattern)

    def useIpuId(self, ipu_id: int) -> Self:
        """Use this device id (as gc-info lists them); recorded, not simulated.

        Args:
            ipu_id: an integer >= 0.
        """
        return self._set(ipu_id=ipu_id)

    def logDir(self, log_dir: str) -> Self:
        """The directory PopTorch writes its logs to (default "."); recorded.

        Args:
            log_dir: a path.
        """
        return self._set(log_dir=log_dir)

    def maxRepeatLogs(self, max_lines: int | None) -> Self:
        """How many times a log line that repeats is written before PopTorch suppresses the
        rest (default 4); recorded (the simulator's logs do not repeat so).

        Args:
            max_lines: an integer >= 0, or None for no limit.
        """
        return self._set(max_repeat_logs=max_lines)

    def modelName(self, name: str) -> Self:
        """The model's name in the profiling report (default: the wrapped class's name).

        Args:
            name: a string.
        """
        return self._set(model_name=name)

    def enableSyntheticData(self, enabled: bool) -> Self:
        """Make the data on the device instead of streaming it from the host: no host I/O,
        so no input or output perf counters, as in PopTorch.

        Args:
            enabled: True or False (default False).
        """
        return self._set(enable_synthetic_data=enabled)

    def logCycleCount(self, log_cycle_count: bool) -> Self:
        """Count the IPU cycles of each run (`cycleCount()`); simulated here, so no hardware
        is needed (docs/differences.md).

        Args:
            log_cycle_count: True or False (default False).
        """
        return self._set(log_cycle_count=log_cycle_count)

    def enableProfiling(self, profile_dir: str | None = None) -> Self:
        """Write the profiling report of each compiled model into this directory.

        Args:
            profile_dir: a directory (default None: the current directory, as in PopTorch).
        """
        return self._set(profile_dir=profile_dir or ".")

    def showCompilationProgressBar(self, show: bool = True) -> Self:
        """Show a progress bar while the model compiles (shown by default).

        Args:
            show: True or False (default True).
        """
        return self._set(show_compilation_progress_bar=show)

    def enableExecutableCaching(self, path: str | None) -> Self:
        """Keep compiled executables in this directory, to load instead of recompiling;
        recorded (compiling is quick here). POPTORCH_CACHE_DIR sets it too.

        Args:
            path: a directory, or None to turn caching off.
        """
        return self._set(executable_cache_dir=path)

    def relaxOptimizerAttributesChecks(self, relax: bool = True) -> Self:
        """Report optimizer attributes that setOptimizer() does not know as debug messages
        instead of warnings.

        Args:
            relax: True or False (default True; the option is False until set).
        """
        return self._set(relax_optimizer_checks=relax)

