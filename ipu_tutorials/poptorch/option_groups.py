"""The option groups hung off poptorch.Options: Training, Precision, TensorLocations, Distributed."""
from __future__ import annotations

import copy
import os

import torch

from ..errors import Error
from ._checks import check_bool, check_enum, check_int
from ._logging import logger
from ._popart_names import POPART_OPTION_NAMES
from .enums import HalfFloatCastingBehavior, MeanReductionStrategy, ReductionType


class _OptionGroup:
    """Named values with defaults; frozen once a model or DataLoader has taken the options."""

    _defaults: dict = {}
    _optional: frozenset = frozenset()  # names with no default: absent until a setter sets one

    def __init__(self):
        object.__setattr__(self, "_values", copy.deepcopy(self._defaults))
        object.__setattr__(self, "_frozen", False)

    def __getattr__(self, name):
        values = self.__dict__.get("_values", {})
        if name in values:
            return values[name]
        raise AttributeError(f"{type(self).__name__} has no option {name!r}; "
                             f"its options are: {', '.join(sorted(values))}")

    def __setattr__(self, name, value):
        if name == "__class__" and isinstance(value, type) and issubclass(value, type(self)):
            object.__setattr__(self, name, value)  # popdist swaps a group for a subclass of it
            return
        raise AttributeError(f"set options with their methods (for example "
                             f"opts.deviceIterations(4)), not by assigning {name!r}")

    def _check_not_frozen(self, key: str = "an option"):
        if self._frozen:
            raise Error(f"cannot change {key}: these Options are frozen because a "
                        f"poptorch.DataLoader or wrapped model already uses them. Call "
                        f"options.clone() and change the copy instead.")

    def _set(self, key: str, value):
        """Store one value under a name of the group's table (its defaults and optional names)."""
        self._check_not_frozen(repr(key))
        self._check_name(key)
        self._values[key] = value
        return self

    def _check_name(self, key: str) -> None:
        """A name outside the table is an error, never a silent new option."""
        if key not in self._defaults and key not in self._optional:
            valid = ", ".join(sorted([*self._defaults, *self._optional]))
            raise ValueError(f"unknown option {key!r} for {type(self).__name__}; "
                             f"valid names: {valid}")

    def set(self, **kwargs):
        """Set raw values by name; each must be a known option of the default's type."""
        for key, value in kwargs.items():
            if key not in self._values:
                raise ValueError(f"unknown option {key!r} for {type(self).__name__}; "
                                 f"valid names: {', '.join(sorted(self._values))}")
            default = self._defaults.get(key)
            wrong_bool = isinstance(value, bool) and not isinstance(default, bool)
            if default is not None and (wrong_bool or not isinstance(value, type(default))):
                raise TypeError(f"option {key!r} expects {type(default).__name__}, "
                                f"got {type(value).__name__} {value!r}")
            self._set(key, value)
        return self

    def _freeze(self):
        object.__setattr__(self, "_frozen", True)

    def __deepcopy__(self, memo):
        """A deep copy is a fresh, modifiable set of options, as in PopTorch."""
        clone = object.__new__(type(self))
        memo[id(self)] = clone
        for name, value in self.__dict__.items():
            object.__setattr__(clone, name, copy.deepcopy(value, memo))
        object.__setattr__(clone, "_frozen", False)
        return clone

    def _unfrozen_copy(self):
        clone = copy.deepcopy(self)
        object.__setattr__(clone, "_frozen", False)
        return clone

    def toDict(self) -> dict:
        return {k: _plain(v) for k, v in self._values.items()}

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={_shown(v)}" for k, v in self._values.items())
        return f"{type(self).__name__}({body})"


def _plain(value):
    """A JSON-friendly copy of an option value."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, torch.dtype):
        return str(value).replace("torch.", "")
    if hasattr(value, "value") and hasattr(value, "name"):  # enums
        return value.name
    return value


def _shown(value):
    if hasattr(value, "name") and hasattr(value, "value"):
        return f"{type(value).__name__}.{value.name}"
    return repr(value)


class _TrainingOptions(_OptionGroup):
    """opts.Training: gradient accumulation and how gradients are reduced."""

    _defaults = {
        "gradient_accumulation": 1,
        "accumulation_and_replication_reduction_type": ReductionType.Mean,
        "meanAccumulationAndReplicationReductionStrategy": MeanReductionStrategy.Post,
        "auto_loss_scaling": False,
    }

    def gradientAccumulation(self, gradient_accumulation: int):
        return self._set("gradient_accumulation",
                         check_int("Training.gradientAccumulation()", gradient_accumulation))

    def accumulationAndReplicationReductionType(self, reduction_type: ReductionType):
        check_enum("Training.accumulationAndReplicationReductionType()", reduction_type, ReductionType)
        if reduction_type == ReductionType.NoReduction:
            raise ValueError("Training.accumulationAndReplicationReductionType(): gradients must be "
                             "reduced; use ReductionType.Mean (the default) or ReductionType.Sum")
        return self._set("accumulation_and_replication_reduction_type", reduction_type)

    def setMeanAccumulationAndReplicationReductionStrategy(self, strategy: MeanReductionStrategy):
        check_enum("Training.setMeanAccumulationAndReplicationReductionStrategy()", strategy,
                   MeanReductionStrategy)
        return self._set("meanAccumulationAndReplicationReductionStrategy", strategy)

    def setAutomaticLossScaling(self, enabled: bool):
        return self._set("auto_loss_scaling", check_bool("Training.setAutomaticLossScaling()", enabled))


class _PrecisionOptions(_OptionGroup):
    """opts.Precision: partials type, stochastic rounding, half/float casting."""

    _defaults = {
        "partials_type": torch.float32,
        "enable_stochastic_rounding": False,
        "enable_floating_point_exceptions": False,
        "half_float_casting": HalfFloatCastingBehavior.Default,
    }

    def setPartialsType(self, dtype: torch.dtype):
        if dtype not in (torch.float32, torch.float16):
            raise ValueError(f"Precision.setPartialsType() accepts torch.float or torch.half, "
                             f"got {dtype!r}")
        return self._set("partials_type", dtype)

    def enableStochasticRounding(self, enabled: bool):
        return self._set("enable_stochastic_rounding",
                         check_bool("Precision.enableStochasticRounding()", enabled))

    def enableFloatingPointExceptions(self, enabled: bool):
        return self._set("enable_floating_point_exceptions",
                         check_bool("Precision.enableFloatingPointExceptions()", enabled))

    def halfFloatCasting(self, behavior: HalfFloatCastingBehavior):
        """Deprecated since PopTorch 3.0, which always upcasts mixed float16/float32 ops as
        PyTorch does. Recorded; only FloatDowncastToHalf changes anything here (the SDK 2.x
        tracing frontend's default, kept as a documented extension: docs/differences.md)."""
        check_enum("Precision.halfFloatCasting()", behavior, HalfFloatCastingBehavior)
        logger.warning("[Deprecated] options.Precision.halfFloatCasting(): since PopTorch 3.0 "
                       "mixed float16/float32 ops are upcast to float32, as in PyTorch; cast "
                       "inputs or layers to float16 yourself to compute in float16")
        return self._set("half_float_casting", behavior)


TENSOR_KINDS = ("activation", "weight", "optimizer", "accumulator")  # what TensorLocations places


class TensorLocationSettings(_OptionGroup):
    """Where one kind of tensor lives: on chip, off chip, or sharded across replicas."""

    _defaults: dict = {}
    _optional = frozenset({"onChip", "useReplicatedTensorSharding", "minElementsForOffChip",
                           "minElementsForReplicatedTensorSharding", "useIOTilesToLoad",
                           "useIOTilesToStore"})

    def useOnChipStorage(self, use: bool = True):
        return self._set("onChip", int(check_bool("useOnChipStorage()", use)))

    def useReplicatedTensorSharding(self, use: bool = True):
        return self._set("useReplicatedTensorSharding",
                         int(check_bool("useReplicatedTensorSharding()", use)))

    def minElementsForOffChip(self, min_elements: int):
        return self._set("minElementsForOffChip",
                         check_int("minElementsForOffChip()", min_elements, minimum=0))

    def minElementsForReplicatedTensorSharding(self, min_elements: int):
        return self._set("minElementsForReplicatedTensorSharding",
                         check_int("minElementsForReplicatedTensorSharding()", min_elements, minimum=0))

    def useIOTilesToLoad(self, use: bool = True):
        return self._set("useIOTilesToLoad", int(check_bool("useIOTilesToLoad()", use)))

    def useIOTilesToStore(self, use: bool = True):
        return self._set("useIOTilesToStore", int(check_bool("useIOTilesToStore()", use)))


class _TensorLocationOptions(_OptionGroup):
    """opts.TensorLocations: where activations, weights, optimizer state and accumulators live."""

    _defaults: dict = {}
    _optional = frozenset({f"location_{kind}" for kind in TENSOR_KINDS} | {"numIOTiles"})

    def numIOTiles(self, num_tiles: int):
        """Tiles set aside for host I/O (overlapped I/O needs them); recorded, not simulated."""
        if not isinstance(num_tiles, int) or isinstance(num_tiles, bool):
            raise TypeError(f"numIOTiles() expects an int, got {num_tiles!r}")
        # PopTorch checks with assert statements: the same AssertionError, kept under python -O
        if not (32 <= num_tiles <= 192 and num_tiles % 2 == 0):
            raise AssertionError("numIOTiles must be an even number between 32 and 192.")
        return self._set("numIOTiles", num_tiles)

    def _set_location(self, kind: str, settings: TensorLocationSettings):
        if not isinstance(settings, TensorLocationSettings):
            raise TypeError(f"TensorLocations.set{kind.title()}Location() expects a "
                            f"poptorch.TensorLocationSettings, got {type(settings).__name__}")
        return self._set(f"location_{kind}", dict(settings._values))

    def setActivationLocation(self, settings: TensorLocationSettings):
        return self._set_location("activation", settings)

    def setWeightLocation(self, settings: TensorLocationSettings):
        return self._set_location("weight", settings)

    def setOptimizerLocation(self, settings: TensorLocationSettings):
        return self._set_location("optimizer", settings)

    def setAccumulatorLocation(self, settings: TensorLocationSettings):
        return self._set_location("accumulator", settings)

    def location(self, kind: str) -> dict:
        """The settings the user gave for one tensor kind ({} when never set)."""
        return self._values.get(f"location_{kind}", {})


class _DistributedOptions(_OptionGroup):
    """opts.Distributed: several host processes (Options reads them from the MPI environment)."""

    _defaults = {"num_distributed_processes": 1, "distributed_process_id": 0}

    def configureProcessId(self, process_id: int, num_processes: int):
        check_int("Distributed.configureProcessId(num_processes)", num_processes)
        check_int("Distributed.configureProcessId(process_id)", process_id, minimum=0)
        if process_id >= num_processes:
            raise ValueError(f"Distributed.configureProcessId(): process_id must be below "
                             f"num_processes, got {process_id} of {num_processes}")
        self._set("num_distributed_processes", num_processes)
        return self._set("distributed_process_id", process_id)

    def disable(self):
        """One process: forget the process id and count (environment or configureProcessId)."""
        self._set("num_distributed_processes", 1)
        return self._set("distributed_process_id", 0)

    def setEnvVarNames(self, var_num_processes: str, var_process_id: str):
        """Read the process count and id from these environment variables (absent: 1 and 0)."""
        return self.configureProcessId(int(os.environ.get(var_process_id, "0")),
                                       int(os.environ.get(var_num_processes, "1")))

    @property
    def processId(self) -> int:
        return self.distributed_process_id

    @property
    def numProcesses(self) -> int:
        return self.num_distributed_processes


class _JitOptions(_OptionGroup):
    """opts.Jit: kept for compatibility; the simulator always runs the model eagerly."""

    _defaults = {"trace_model": False}

    def traceModel(self, trace_model: bool):
        return self._set("trace_model", check_bool("Jit.traceModel()", trace_model))


class _PopartOptions(_OptionGroup):
    """opts._Popart: low-level PopART options, recorded (and shown in reports) but not simulated."""

    _defaults: dict = {}
    _optional = POPART_OPTION_NAMES

    @property
    def options(self) -> dict:
        """The PopART options set so far, by name (PopTorch's `_Popart.options`; a copy)."""
        return dict(self._values)

    def set(self, key: str, value):
        """Record a PopART session option; as in PopTorch, an unknown name is refused when a
        model compiles with these options (PopART reads them then), not here."""
        if not isinstance(key, str):
            raise TypeError(f"_Popart.set() expects a string key, got {key!r}")
        self._check_not_frozen(repr(key))
        self._values[key] = value
        return self

    def setEngineOptions(self, options: dict):
        if not isinstance(options, dict):
            raise TypeError(f"_Popart.setEngineOptions() expects a dict, got {type(options).__name__}")
        return self._set("engineOptions", dict(options))

    def setPatterns(self, patterns: dict, level: int = 2):
        if not isinstance(patterns, dict):
            raise TypeError(f"_Popart.setPatterns() expects a dict, got {type(patterns).__name__}")
        self._set("patternsLevel", level)
        return self._set("patterns", dict(patterns))
