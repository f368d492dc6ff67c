"""poptorch.Options: how a model is batched, placed, reduced, profiled and where it runs.

Each option is declared once below (`Option`: PopTorch's setter, the default, the check, the
RunSpec field); the setters check and store through those declarations, and toDict (and,
inside the facade, `_options_dict.from_flat`),
the options-file reader and the simulator's RunSpec are derived from them.
"""
from __future__ import annotations

from ..support import environment
from . import _options_file as options_file
from ._checks import check_bool, check_enum, check_fraction, check_int, check_str, one_of
from ._declared import Group, Option, enum_value, groups, shown
from ._options_dict import strategy_entries, strategy_from_entries, to_flat
from ._run_options import _RunOptions
from .enums import CommGroupType, OutputMode
from .option_groups import (_DistributedOptions, _JitOptions, _PopartOptions, _PrecisionOptions,
                            _TrainingOptions)
from .strategies import AutoStage, ExecutionStrategy, PipelinedExecution
from .tensor_locations import _TensorLocationOptions


def _strategy(where: str, strategy):
    if not isinstance(strategy, ExecutionStrategy):
        names = ", ".join(f"poptorch.{cls.__name__}" for cls in ExecutionStrategy)
        raise TypeError(f"{where} expects one of {names}; got {type(strategy).__name__}")
    return strategy


def _memory_proportions(where: str, proportions) -> dict:
    """{"IPU0": 0.5, ...}: a fraction of each IPU's memory for temporaries."""
    if not isinstance(proportions, dict):
        raise TypeError(f"{where} expects a dict such as {{\"IPU0\": 0.5}}")
    for key, value in proportions.items():
        # PopTorch asserts the key's form
        assert isinstance(key, str) and key.startswith("IPU") and key[3:].isdigit(), (
            f"Available memory proportions are expected to be in a dictionary of "
            f"{{\"IPU0\": 0.5}} where the 0 in IPU is the index of the IPU ({where}). Invalid "
            f"key: {key!r}")
        check_fraction(f"{where}[{key!r}]", value)
    return dict(proportions)


def _by_ipu(proportions: dict) -> dict:
    """{"IPU0": 0.5} as PopTorch holds it: {0: 0.5}."""
    return {int(key[3:]): value for key, value in proportions.items()}


class Options(_RunOptions):
    """All the settings of a wrapped model or DataLoader, as in PopTorch.

    Each setter checks its arguments (an error names the setter, the rule and the value) and
    returns the Options, so that calls chain: `poptorch.Options().deviceIterations(4)`. Read a
    value by its PopTorch attribute name (`opts.device_iterations`). A wrapped model or a
    DataLoader freezes the Options it is given; `clone()` gives a modifiable copy.

    The settings of the device and the run (randomSeed, connectionType, enableProfiling...)
    are declared in its base class, `_RunOptions`.
    """

    # name = Option(default, setter=PopTorch's setter, check=..., spec=the RunSpec field it fills)
    replication_factor = Option(1, setter="replicationFactor", check=check_int,
                                spec="replication_factor")
    input_group_size = Option(1, setter="inputReplicaGrouping", argument="input_group_size",
                              check=check_int, spec="input_group_size")
    input_group_type = Option(CommGroupType.Consecutive, setter="inputReplicaGrouping",
                              argument="input_group_type", check=one_of(CommGroupType),
                              key="input_cgt", spec="orthogonal_groups",
                              to_spec=lambda kind: kind == CommGroupType.Orthogonal)
    device_iterations = Option(1, setter="deviceIterations", check=check_int,
                               spec="device_iterations")
    auto_round_num_ipus = Option(False, setter="autoRoundNumIPUs", check=check_bool,
                                 spec="auto_round_num_ipus")
    # the RunSpec's output mode also depends on training (Default): _to_simulator.output_mode
    output_mode = Option(OutputMode.Default, setter="outputMode", check=one_of(OutputMode),
                         held=enum_value)  # PopTorch stores the enum's int
    output_return_period = Option(1, setter="outputMode", argument="output_return_period",
                                  check=check_int, spec="output_return_period")
    available_memory_proportion = Option(
        {}, setter="setAvailableMemoryProportion", check=_memory_proportions,
        spec="available_memory", to_spec=_by_ipu, held=_by_ipu)
    broadcast_buffers = Option(True, setter="broadcastBuffers", check=check_bool)
    anchored_tensors = Option({}, setter="anchorTensor")
    # the RunSpec's strategy is built from it by _to_simulator.strategy_spec
    execution_strategy = Option(PipelinedExecution(AutoStage.SameAsIpu),
                                setter="setExecutionStrategy", check=_strategy,
                                kind=ExecutionStrategy, held=None,
                                to_flat=strategy_entries, from_flat=strategy_from_entries,
                                flat_keys=("execution_mode", "separate_backward_phase",
                                           "tensors_liveness", "serial_phases_execution"))
    _more_setters = ("updatableNamedBuffers",)  # it sets a PopART option

    Training = Group(_TrainingOptions)
    """Training's options: gradient accumulation and reductions."""
    Precision = Group(_PrecisionOptions, flat=False)  # PopTorch's toDict() leaves it out
    """Number formats: partials type, stochastic rounding, floating-point exceptions."""
    TensorLocations = Group(_TensorLocationOptions)
    """Where activations, weights, optimizer state and accumulators live."""
    Distributed = Group(_DistributedOptions)
    """Several host processes (poprun instances), each with its own replicas."""
    Jit = Group(_JitOptions, flat=False)
    """Kept for compatibility: the model always runs eagerly."""
    _Popart = Group(_PopartOptions)
    """PopART session options by PopART's names, recorded (advanced users, as in PopTorch)."""

    def __init__(self):
        super().__init__()
        for group in groups(type(self)):
            object.__setattr__(self, group.name, group.cls())
        self._apply_environment(environment.read())

    def _apply_environment(self, env: environment.Environment) -> None:
        """PopTorch's environment variables set the starting values (see ipu_tutorials.support.environment)."""
        if env.ipu_model:
            self.useIpuModel(True)
        if env.cache_dir:
            self.enableExecutableCaching(env.cache_dir)
        if env.mpi_rank is not None and env.mpi_size is not None:
            self.Distributed.configureProcessId(int(env.mpi_rank), int(env.mpi_size))
        if env.default_options:
            try:
                self.from_json(env.default_options)
            except (ValueError, TypeError, AssertionError) as error:  # say where it came from
                raise type(error)(f"POPTORCH_DEFAULT_OPTIONS: {error}") from None

    @property
    def _execution_strategy(self):
        """PopTorch's own (private) name for the strategy, which its tests read."""
        return self._value("execution_strategy")

    # --- batching -------------------------------------------------------------------------
    def deviceIterations(self, device_iterations: int) -> "Options":
        """How many iterations the device runs per call of the model, each on a new batch
        (default 1): one call then reads that many batches, with one round trip to the host.

        Args:
            device_iterations: a positive integer.
        """
        return self._set(device_iterations=device_iterations)

    def replicationFactor(self, replication_factor: int) -> "Options":
        """How many copies of the model run side by side, each on its own IPUs and its own
        share of every batch (default 1). A model on 2 IPUs with factor 4 uses 8 IPUs.

        Args:
            replication_factor: a positive integer.
        """
        return self._set(replication_factor=replication_factor)

    def inputReplicaGrouping(self, input_group_size: int, input_group_type: CommGroupType
                             ) -> "Options":
        """Let groups of replicas share one slice of the input instead of each taking its own.

        Args:
            input_group_size: replicas per group; it must divide the replication factor.
            input_group_type: which replicas form a group: `CommGroupType.Consecutive`
                (0, 1 | 2, 3) or `CommGroupType.Orthogonal` (0, 2 | 1, 3).
        """
        if input_group_type == CommGroupType.NoGrouping:  # as PopTorch: each replica its own
            input_group_size, input_group_type = 1, CommGroupType.Consecutive
        values = self._checked(input_group_size=input_group_size, input_group_type=input_group_type)
        if input_group_type == CommGroupType.All:
            raise ValueError("input_group_type cannot be All: inputReplicaGrouping() groups the "
                             "replicas Consecutive or Orthogonal")
        if self.replication_factor < input_group_size:
            raise ValueError(f"input_group_size cannot be larger than replication_factor "
                             f"({input_group_size} > {self.replication_factor})")
        if self.replication_factor % input_group_size:
            raise ValueError(f"input_group_size must be a factor of replication_factor; "
                             f"{input_group_size} does not divide {self.replication_factor}")
        return self._store(values)

    def outputMode(self, output_mode: OutputMode, output_return_period: int | None = None
                   ) -> "Options":
        """Which results a call returns: `All` (every micro-batch), `Final` (the last),
        `Sum` (their sum), `EveryN` (every N-th device iteration) or `Default` (Final for a
        training model, All for an inference model).

        Args:
            output_mode: a `poptorch.OutputMode`.
            output_return_period: N for `EveryN` (required then); with another mode it is
                ignored, as in PopTorch.
        """
        values = self._checked(output_mode=output_mode)
        period = 1  # like PopTorch, a period given with another mode is ignored
        if output_mode == OutputMode.EveryN:
            # PopTorch asserts this rule
            assert output_return_period and output_return_period > 0, (
                "EveryN anchor must have output_return_period set to valid positive integer, "
                "e.g. outputMode(OutputMode.EveryN, 5)")
            period = output_return_period
        return self._store({**values, **self._checked(output_return_period=period)})

    def defaultOutputMode(self) -> bool:
        """Whether the output mode is still Default (each wrapped model resolves it)."""
        return self._value("output_mode") == OutputMode.Default

    # --- placement ------------------------------------------------------------------------
    def setExecutionStrategy(self, strategy) -> "Options":
        """How the model's blocks are spread over IPUs: `PipelinedExecution` (the default,
        `AutoStage.SameAsIpu`), `ShardedExecution`, `SerialPhasedExecution` or
        `ParallelPhasedExecution`.

        Args:
            strategy: an instance of one of those classes.
        """
        self._check_not_frozen("the execution strategy")
        return self._set(execution_strategy=strategy)

    def autoRoundNumIPUs(self, auto_round_num_ipus: bool = True) -> "Options":
        """Reserve the next power of two of IPUs when the model needs another count (a
        warning says so); without it such a count is an error, as in PopTorch.

        Args:
            auto_round_num_ipus: True or False (default True; the option is False until set).
        """
        return self._set(auto_round_num_ipus=auto_round_num_ipus)

    def setAvailableMemoryProportion(self, available_memory_proportion: dict) -> "Options":
        """The share of each IPU's memory that matmuls and convolutions may use for their
        temporaries; a smaller share means less memory and more, smaller steps.

        Args:
            available_memory_proportion: {"IPU0": 0.5, ...}, each a fraction in (0, 1].
        """
        return self._set(available_memory_proportion=available_memory_proportion)

    # --- device and run -------------------------------------------------------------------
    def broadcastBuffers(self, broadcast_buffers: bool = True) -> "Options":
        """Keep the replicas' buffers (BatchNorm's running statistics) in sync with replica
        0's (True, the default), or let each replica keep its own (False).

        Args:
            broadcast_buffers: True or False (default True).
        """
        return self._set(broadcast_buffers=broadcast_buffers)

    def updatableNamedBuffers(self, buffers: list[str]) -> "Options":
        """The buffers copyNamedBuffersToDevice() uploads: a subset instead of every weight.
        Stored as PopART's updatableNamedBuffers, as PopTorch does.

        Args:
            buffers: a list of buffer names of the model (checked when it compiles).
        """
        if isinstance(buffers, str) or not all(isinstance(b, str) for b in buffers):
            raise TypeError(f"updatableNamedBuffers() expects a list of buffer names, "
                            f"got {buffers!r}")
        self._Popart.set("updatableNamedBuffers", list(buffers))
        return self

    def anchorTensor(self, short_name: str, long_name: str, output_mode=None,
                     output_return_period: int | None = 1) -> None:
        """Keep a tensor of the training step (a weight or gradient by PopART's name) to read
        with `getAnchoredTensor(short_name)` after each run. As in PopTorch, it returns None
        and the anchor is held as `[long_name, output_mode is None, output_mode, period]`.

        Args:
            short_name: the name to read it by.
            long_name: PopART's name of the tensor, such as "Gradient___fc.weight".
            output_mode: when it is returned (default None: as the model's outputs).
            output_return_period: N for `OutputMode.EveryN` (default 1; 1 for other modes).
        """
        check_str("anchorTensor(short_name)", short_name)
        check_str("anchorTensor(long_name)", long_name)
        if output_mode is not None:
            check_enum("anchorTensor(output_mode)", output_mode, OutputMode)
        if output_mode != OutputMode.EveryN:
            output_return_period = 1
        anchor = [long_name, output_mode is None, output_mode, output_return_period]
        self._set(anchored_tensors={**self._value("anchored_tensors"), short_name: anchor})

    # --- copies, files and dictionaries ---------------------------------------------------
    def clone(self) -> "Options":
        """A deep, unfrozen copy (its groups and strategy too), as PopTorch's clone()."""
        import copy

        return copy.deepcopy(self)

    def _freeze(self):
        super()._freeze()
        for group in groups(type(self)):
            getattr(self, group.name)._freeze()

    def _spec_fields(self) -> dict:
        """The RunSpec fields every declared option of these Options and their groups fills."""
        fields = super()._spec_fields()
        for group in groups(type(self)):
            fields.update(getattr(self, group.name)._spec_fields())
        return fields

    def toDict(self) -> dict:
        """PopTorch's backend layout: one flat dict, enum values, no Precision or Jit options.

        The execution strategy is `execution_mode` (0 pipelined, 1 sharded, 2 phased), the
        executable cache is `cachePath`, tensor locations are `location_<kind>` dicts.
        """
        return to_flat(self)

    def from_json(self, string: str) -> "Options":
        """Apply {"methodName": value or [arguments], "Group.methodName": ...} from JSON text,
        as PopTorch's from_json (and POPTORCH_DEFAULT_OPTIONS) does; "OutputMode.All"-style
        strings become enum members.

        Args:
            string: the JSON text.
        """
        options_file.apply_json(self, string)
        return self

    def loadFromFile(self, filepath: str) -> "Options":
        """Apply a file of option calls, one per line, without the `options.` prefix
        (`deviceIterations(4)`), as PopTorch does; lines are parsed, never evaluated, and
        may call only the setters. A .json or .toml file holds {"methodName": args} instead.

        Args:
            filepath: the file's path.
        """
        options_file.apply_file(self, filepath)
        return self

    def __repr__(self) -> str:
        lines = [f"    {option.name}={shown(value)}," for option, value in self._items()]
        lines += [f"    {group.name}={getattr(self, group.name)!r},"
                  for group in groups(type(self))]
        return "Options(\n" + "\n".join(lines) + "\n)"


__all__ = ["Options"]
