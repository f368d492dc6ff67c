"""The option groups hung off poptorch.Options: Training, Precision, Distributed, Jit, _Popart.

Each group declares its options once (`_declared.Option`); the setters check and store
through those declarations. The tensor-location groups are in tensor_locations.py.
"""
from __future__ import annotations

import functools
import os

import torch

from ._checks import check_bool, check_enum, check_int, one_of
from ._declared import Option, _OptionGroup, backend_value, plain, shown
from ._logging import logger
from ._popart_names import POPART_SPEC_FIELDS
from .enums import HalfFloatCastingBehavior, MeanReductionStrategy, ReductionType
# files saved before the tensor-location groups moved to tensor_locations.py name them here
from .tensor_locations import TensorLocationSettings, _TensorLocationOptions  # noqa: F401


def _reduced(where: str, reduction_type) -> ReductionType:
    """ReductionType.Mean or Sum: training must reduce its gradients somehow."""
    check_enum(where, reduction_type, ReductionType)
    if reduction_type == ReductionType.NoReduction:
        raise ValueError(f"{where}: gradients must be reduced; use ReductionType.Mean (the "
                         f"default) or ReductionType.Sum")
    return reduction_type


def _partials(where: str, dtype) -> torch.dtype:
    if dtype not in (torch.float32, torch.float16):
        raise ValueError(f"{where} accepts torch.float or torch.half, got {dtype!r}")
    return dtype


def _width(dtype: torch.dtype) -> int:
    return torch.empty(0, dtype=dtype).element_size()


class _TrainingOptions(_OptionGroup):
    """opts.Training: gradient accumulation and how gradients are reduced (training only)."""

    _prefix = "Training."
    gradient_accumulation = Option(1, setter="gradientAccumulation", check=check_int,
                                   spec="gradient_accumulation")
    accumulation_and_replication_reduction_type = Option(
        ReductionType.Mean, setter="accumulationAndReplicationReductionType", check=_reduced,
        spec="mean_reduction", to_spec=lambda kind: kind == ReductionType.Mean)
    meanAccumulationAndReplicationReductionStrategy = Option(
        MeanReductionStrategy.Post, setter="setMeanAccumulationAndReplicationReductionStrategy",
        check=one_of(MeanReductionStrategy),
        spec="running_mean", to_spec=lambda strategy: strategy == MeanReductionStrategy.Running)
    auto_loss_scaling = Option(False, setter="setAutomaticLossScaling", check=check_bool,
                               held=None)  # PopTorch sends it to PopART

    def gradientAccumulation(self, gradient_accumulation: int) -> "_TrainingOptions":
        """Accumulate the gradients of this many micro-batches before each weight update.

        Each call of a training model then reads `gradient_accumulation` micro-batches per
        device iteration and replica, so it also scales the samples between updates. As in
        PopTorch, pipelined training over N stages needs at least 2N - 1 (the backward pass
        adds N - 1 stages); more micro-batches shorten the share of fill and flush.

        Args:
            gradient_accumulation: a positive integer (default 1). An inference model must
                keep 1, as PopTorch requires.
        """
        return self._set(gradient_accumulation=gradient_accumulation)

    def accumulationAndReplicationReductionType(self, reduction_type: ReductionType
                                                ) -> "_TrainingOptions":
        """How gradients are combined across accumulated micro-batches and replicas.

        Args:
            reduction_type: `ReductionType.Mean` (the default: divide by the number of
                gradients) or `ReductionType.Sum`; `NoReduction` raises ValueError, as in
                PopTorch.
        """
        return self._set(accumulation_and_replication_reduction_type=reduction_type)

    def setMeanAccumulationAndReplicationReductionStrategy(
            self, mean_reduction_strategy: MeanReductionStrategy) -> "_TrainingOptions":
        """When a Mean reduction divides: `Post` (default) divides the summed gradients once,
        `Running` keeps a running mean (safer in float16). As in PopTorch, a model whose
        optimizer accumulates in float16 switches to Running unless this was called.

        Args:
            mean_reduction_strategy: a `poptorch.MeanReductionStrategy`.
        """
        return self._set(meanAccumulationAndReplicationReductionStrategy=mean_reduction_strategy)

    def setAutomaticLossScaling(self, enabled: bool) -> "_TrainingOptions":
        """Let the device adjust the loss scale of a float16 model as it trains (PopART's
        automatic loss scaling; see poptorch/_loss_scaling.py for the update rule).

        Args:
            enabled: True or False (default False).
        """
        return self._set(auto_loss_scaling=enabled)


class _PrecisionOptions(_OptionGroup):
    """opts.Precision: partials type, stochastic rounding, floating-point exceptions."""

    _prefix = "Precision."
    # PopTorch sends all of these to PopART: none is an attribute of opts.Precision
    partials_type = Option(torch.float32, setter="setPartialsType", check=_partials,
                           spec="partials_bytes", to_spec=_width, held=None)
    enable_stochastic_rounding = Option(False, setter="enableStochasticRounding", check=check_bool,
                                        held=None)
    enable_floating_point_exceptions = Option(False, setter="enableFloatingPointExceptions",
                                              check=check_bool, spec="floating_point_exceptions",
                                              held=None)
    half_float_casting = Option(HalfFloatCastingBehavior.Default, setter="halfFloatCasting",
                                check=one_of(HalfFloatCastingBehavior), held=None)

    def setPartialsType(self, dtype: torch.dtype) -> "_PrecisionOptions":
        """The type of the partial sums inside matmuls and convolutions. float16 partials
        halve their memory and round each partial sum to float16.

        Args:
            dtype: torch.float (the default) or torch.half; anything else raises ValueError,
                as in PopTorch.
        """
        return self._set(partials_type=dtype)

    def enableStochasticRounding(self, enabled: bool) -> "_PrecisionOptions":
        """Round float16 results up or down at random, in proportion to the distance, so
        that the rounding averages out; the draws follow opts.randomSeed.

        Args:
            enabled: True or False (default False).
        """
        return self._set(enable_stochastic_rounding=enabled)

    def enableFloatingPointExceptions(self, enabled: bool) -> "_PrecisionOptions":
        """Stop at the first op that overflows or makes an invalid value (inf - inf, 0 / 0,
        0 x inf...), which PopTorch raises as a RuntimeError.

        Args:
            enabled: True or False (default False).
        """
        return self._set(enable_floating_point_exceptions=enabled)

    def halfFloatCasting(self, half_float_casting: HalfFloatCastingBehavior
                         ) -> "_PrecisionOptions":
        """Deprecated since PopTorch 3.0, which always upcasts mixed float16/float32 ops as
        PyTorch does; it logs PopTorch's deprecation warning. The value is recorded; only
        FloatDowncastToHalf changes anything here (the SDK 2.x tracing frontend's default,
        kept as a documented extension: docs/differences.md).

        Args:
            half_float_casting: a `poptorch.HalfFloatCastingBehavior`.
        """
        values = self._checked(half_float_casting=half_float_casting)
        logger.warning("[Deprecated] options.Precision.halfFloatCasting(): since PopTorch 3.0 "
                       "mixed float16/float32 ops are upcast to float32, as in PyTorch; cast "
                       "inputs or layers to float16 yourself to compute in float16")
        return self._store(values)


class _DistributedOptions(_OptionGroup):
    """opts.Distributed: several host processes, each driving its own replicas. Options reads
    the process id and count from the MPI environment, as PopTorch does."""

    _prefix = "Distributed."
    num_distributed_processes = Option(1, setter="configureProcessId", argument="num_processes",
                                       check=check_int, spec="instances")
    distributed_process_id = Option(0, setter="configureProcessId", argument="process_id",
                                    check=functools.partial(check_int, minimum=0), spec="instance")
    _more_setters = ("disable", "setEnvVarNames")  # they set the two options above too

    def configureProcessId(self, process_id: int, num_processes: int) -> "_DistributedOptions":
        """Set this process's index and the number of processes the run is split over.

        Args:
            process_id: this process's index, from 0.
            num_processes: the number of processes (default 1); process_id must be below it.
        """
        values = self._checked(num_distributed_processes=num_processes,
                               distributed_process_id=process_id)
        if process_id >= num_processes:
            raise ValueError(f"Distributed.configureProcessId(): process_id must be below "
                             f"num_processes, got {process_id} of {num_processes}")
        return self._store(values)

    def disable(self) -> "_DistributedOptions":
        """One process: forget the process id and count, whether from the environment or
        from configureProcessId."""
        return self._set(num_distributed_processes=1, distributed_process_id=0)

    def setEnvVarNames(self, var_num_processes: str, var_process_id: str
                       ) -> "_DistributedOptions":
        """Read the process count and id from these environment variables (1 and 0 when
        absent). PopTorch reads OMPI_COMM_WORLD_SIZE and OMPI_COMM_WORLD_RANK by default.

        Args:
            var_num_processes: the variable holding the number of processes.
            var_process_id: the variable holding this process's index.
        """
        return self.configureProcessId(int(os.environ.get(var_process_id, "0")),
                                       int(os.environ.get(var_num_processes, "1")))

    @property
    def processId(self) -> int:
        """This process's index among numProcesses."""
        return self._value("distributed_process_id")

    @property
    def numProcesses(self) -> int:
        """The number of processes the run is split over."""
        return self._value("num_distributed_processes")


class _JitOptions(_OptionGroup):
    """opts.Jit: kept for compatibility; the simulator always runs the model eagerly."""

    _prefix = "Jit."
    trace_model = Option(False, setter="traceModel", check=check_bool, held=None)

    def traceModel(self, trace_model: bool) -> "_JitOptions":
        """Recorded only: the model always runs as PyTorch code. (PopTorch 3.x deprecates
        this setter; tracing was the SDK 2.x frontend.)

        Args:
            trace_model: True or False (default False).
        """
        return self._set(trace_model=trace_model)


class _PopartOptions(_OptionGroup):
    """opts._Popart: PopART session options by PopART's names, recorded and shown in reports.

    Only the names in POPART_SPEC_FIELDS reach the simulator (autoRecomputation); the rest
    are recorded, not simulated (docs/differences.md).
    """

    _prefix = "_Popart."
    _more_setters = ("set", "setEngineOptions", "setPatterns")

    def __init__(self):
        super().__init__()
        object.__setattr__(self, "options", {})  # PopTorch's attribute: name -> value

    def set(self, key: str, value) -> "_PopartOptions":
        """Record one PopART session option, by PopART's name (PopTorch passes it on to
        PopART). As in PopTorch, any name is recorded here and a name PopART does not know is
        refused when a model compiles with these options (poptorch/_validation.py).

        Args:
            key: the session option's name, such as "autoRecomputation".
            value: its value; PopART's enums are given as integers.
        """
        if not isinstance(key, str):
            raise TypeError(f"_Popart.set() expects a string key, got {key!r}")
        self._check_not_frozen(repr(key))
        self.options[key] = value
        return self

    def setEngineOptions(self, engine_options: dict) -> "_PopartOptions":
        """Poplar engine options, recorded as PopART's engineOptions.

        Args:
            engine_options: a dict of option name to value (strings, as Poplar takes them).
        """
        if not isinstance(engine_options, dict):
            raise TypeError(f"_Popart.setEngineOptions() expects a dict, got "
                            f"{type(engine_options).__name__}")
        return self.set("engineOptions", dict(engine_options))

    def setPatterns(self, patterns: dict, level: int = 2) -> "_PopartOptions":
        """PopART's graph transformation patterns to switch on or off, over a base level.

        Args:
            patterns: a dict of pattern name to True or False.
            level: PopART's PatternsLevel to start from (default 2, Default).
        """
        if not isinstance(patterns, dict):
            raise TypeError(f"_Popart.setPatterns() expects a dict, got {type(patterns).__name__}")
        self.set("patternsLevel", level)
        return self.set("patterns", dict(patterns))

    def __setstate__(self, state: dict) -> None:
        """As pickled; a file saved before `options` held PopART's options in `_values`."""
        state = dict(state)
        state.setdefault("options", state.pop("_values", {}))
        self.__dict__.update(state)

    def _spec_fields(self) -> dict:
        """The RunSpec fields the PopART options the simulator reads fill."""
        return {field: convert(self.options[name])
                for name, (field, convert) in POPART_SPEC_FIELDS.items() if name in self.options}

    def _flat_entries(self) -> dict:
        """The PopART options as PopTorch merges them into its flat backend dict."""
        return backend_value(self.options)

    def toDict(self) -> dict:
        """The PopART options set so far, JSON-friendly (opts._Popart is private in PopTorch
        too; its options are `opts._Popart.options`)."""
        return plain(self.options)

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={shown(v)}" for k, v in self.options.items())
        return f"{type(self).__name__}({body})"
