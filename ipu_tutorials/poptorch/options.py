"""poptorch.Options: how a model is batched, placed, reduced, profiled and where it runs."""
from __future__ import annotations

import ast

from .. import environment
from . import _options_file as options_file
from ._checks import check_bool, check_enum, check_fraction, check_int, check_str
from ._option_rules import check_version
from .enums import ConnectionType, OutputMode, SyncPattern, CommGroupType
from .option_groups import (_DistributedOptions, _JitOptions, _OptionGroup, _PopartOptions,
                            _PrecisionOptions, _TensorLocationOptions, _TrainingOptions, _shown)
from ._options_dict import from_flat, to_flat
from .strategies import AutoStage, ExecutionStrategy, PipelinedExecution


class Options(_OptionGroup):
    """All the settings of a wrapped model or DataLoader. Every setter returns the Options."""

    _defaults = {
        "replication_factor": 1,
        "input_group_size": 1,
        "input_group_type": CommGroupType.All,
        "device_iterations": 1,
        "auto_round_num_ipus": False,
        "output_mode": OutputMode.Default,
        "output_return_period": 1,
        "connection_type": ConnectionType.Always,
        "sync_pattern": SyncPattern.Full,
        "available_memory_proportion": {},
        "random_seed": None,
        "ipu_model": False,
        "ipu_version": None,
        "ipu_id": None,
        "log_dir": ".",
        "model_name": None,
        "enable_synthetic_data": False,
        "log_cycle_count": False,
        "profile_dir": None,
        "show_compilation_progress_bar": True,
        "executable_cache_dir": None,
        "broadcast_buffers": True,
        "anchored_tensors": {},
        "relax_optimizer_checks": False,
    }

    def __init__(self):
        super().__init__()
        object.__setattr__(self, "_groups", {
            "Training": _TrainingOptions(), "Precision": _PrecisionOptions(),
            "TensorLocations": _TensorLocationOptions(), "Distributed": _DistributedOptions(),
            "Jit": _JitOptions(), "_Popart": _PopartOptions()})
        object.__setattr__(self, "_strategy", PipelinedExecution(AutoStage.SameAsIpu))
        self._apply_environment(environment.read())

    def _apply_environment(self, env: environment.Environment) -> None:
        """PopTorch's environment variables set the starting values (see ipu_tutorials.environment)."""
        if env.ipu_model:
            self._set("ipu_model", True)
        if env.cache_dir:
            self._set("executable_cache_dir", env.cache_dir)
        if env.mpi_rank is not None and env.mpi_size is not None:
            self.Distributed.configureProcessId(int(env.mpi_rank), int(env.mpi_size))
        if env.default_options:
            try:
                self.from_json(env.default_options)
            except (ValueError, TypeError) as error:  # say where the bad text came from
                raise type(error)(f"POPTORCH_DEFAULT_OPTIONS: {error}") from None

    def __getattr__(self, name):
        groups = self.__dict__.get("_groups", {})
        if name in groups:
            return groups[name]
        return super().__getattr__(name)

    @property
    def GraphProcessing(self) -> _PrecisionOptions:
        """Older SDKs' name for the group that holds halfFloatCasting."""
        return self._groups["Precision"]

    # --- batching -------------------------------------------------------------------------
    def deviceIterations(self, device_iterations: int) -> "Options":
        return self._set("device_iterations", check_int("deviceIterations()", device_iterations))

    def replicationFactor(self, replication_factor: int) -> "Options":
        return self._set("replication_factor", check_int("replicationFactor()", replication_factor))

    def inputReplicaGrouping(self, input_group_size: int, input_group_type: CommGroupType):
        check_int("inputReplicaGrouping(input_group_size)", input_group_size)
        check_enum("inputReplicaGrouping(input_group_type)", input_group_type, CommGroupType)
        if self.replication_factor % input_group_size:
            raise ValueError(f"inputReplicaGrouping(): the group size must divide the replication "
                             f"factor; {input_group_size} does not divide {self.replication_factor}")
        self._set("input_group_type", input_group_type)
        return self._set("input_group_size", input_group_size)

    def outputMode(self, output_mode: OutputMode, output_return_period: int | None = None):
        check_enum("outputMode()", output_mode, OutputMode)
        if output_mode == OutputMode.EveryN:
            if output_return_period is None:
                raise ValueError("outputMode(OutputMode.EveryN) needs output_return_period, "
                                 "e.g. outputMode(OutputMode.EveryN, 5)")
            check_int("outputMode(output_return_period)", output_return_period)
        # Like PopTorch, a period given with another mode is ignored.
        period = output_return_period if output_mode == OutputMode.EveryN else 1
        self._set("output_return_period", period)
        return self._set("output_mode", output_mode)

    def defaultOutputMode(self) -> bool:
        """Whether the output mode is still Default (a wrapped model resolves it)."""
        return self.output_mode == OutputMode.Default

    # --- placement ------------------------------------------------------------------------
    def setExecutionStrategy(self, strategy) -> "Options":
        if not isinstance(strategy, ExecutionStrategy):
            names = ", ".join(f"poptorch.{cls.__name__}" for cls in ExecutionStrategy)
            raise TypeError(f"setExecutionStrategy() expects one of {names}; "
                            f"got {type(strategy).__name__}")
        self._check_not_frozen("the execution strategy")
        object.__setattr__(self, "_strategy", strategy)
        return self

    @property
    def execution_strategy(self):
        return self._strategy

    @property
    def _execution_strategy(self):
        """PopTorch's own (private) name for the strategy, which its tests read."""
        return self._strategy

    def autoRoundNumIPUs(self, auto_round: bool) -> "Options":
        return self._set("auto_round_num_ipus", check_bool("autoRoundNumIPUs()", auto_round))

    def setAvailableMemoryProportion(self, available_memory_proportion: dict) -> "Options":
        # the parameter's name is PopTorch's: code may pass it by keyword
        proportions = available_memory_proportion
        if not isinstance(proportions, dict):
            raise TypeError("setAvailableMemoryProportion() expects a dict such as {\"IPU0\": 0.5}")
        for key, value in proportions.items():
            if not isinstance(key, str) or not key.startswith("IPU") or not key[3:].isdigit():
                raise ValueError(f"setAvailableMemoryProportion(): keys name IPUs as \"IPU0\", "
                                 f"\"IPU1\", ...; got {key!r}")
            check_fraction(f"setAvailableMemoryProportion()[{key!r}]", value)
        return self._set("available_memory_proportion", dict(proportions))

    # --- device and run -------------------------------------------------------------------
    def randomSeed(self, random_seed: int) -> "Options":
        import torch

        check_int("randomSeed()", random_seed, minimum=0)
        if random_seed >= 2**64:
            raise ValueError(f"randomSeed() must be below 2**64 (torch's seed range), got "
                             f"{random_seed}")
        torch.manual_seed(random_seed)
        return self._set("random_seed", random_seed)

    def useIpuModel(self, use_model: bool) -> "Options":
        return self._set("ipu_model", check_bool("useIpuModel()", use_model))

    def useOfflineIpuTarget(self, ipu_version: int = 2) -> "Options":
        check_version(ipu_version)  # rejects unknown versions, listing the known ones
        self._set("ipu_version", ipu_version)
        return self._set("connection_type", ConnectionType.Never)

    def connectionType(self, connection_type: ConnectionType) -> "Options":
        return self._set("connection_type", check_enum("connectionType()", connection_type,
                                                       ConnectionType))

    def syncPattern(self, sync_pattern: SyncPattern) -> "Options":
        return self._set("sync_pattern", check_enum("syncPattern()", sync_pattern, SyncPattern))

    def useIpuId(self, ipu_id: int) -> "Options":
        return self._set("ipu_id", check_int("useIpuId()", ipu_id, minimum=0))

    def logDir(self, log_dir: str) -> "Options":
        return self._set("log_dir", check_str("logDir()", log_dir))

    def modelName(self, name: str) -> "Options":
        return self._set("model_name", check_str("modelName()", name))

    def enableSyntheticData(self, enabled: bool) -> "Options":
        return self._set("enable_synthetic_data", check_bool("enableSyntheticData()", enabled))

    def logCycleCount(self, log_cycle_count: bool) -> "Options":
        return self._set("log_cycle_count", check_bool("logCycleCount()", log_cycle_count))

    def enableProfiling(self, profile_dir: str | None = "profile") -> "Options":
        if profile_dir is not None:
            check_str("enableProfiling()", profile_dir)
        return self._set("profile_dir", profile_dir)

    def showCompilationProgressBar(self, show: bool = True) -> "Options":
        return self._set("show_compilation_progress_bar",
                         check_bool("showCompilationProgressBar()", show))

    def enableExecutableCaching(self, path: str | None) -> "Options":
        if path is not None:
            check_str("enableExecutableCaching()", path)
        return self._set("executable_cache_dir", path)

    def broadcastBuffers(self, broadcast: bool = True) -> "Options":
        return self._set("broadcast_buffers", check_bool("broadcastBuffers()", broadcast))

    def relaxOptimizerAttributesChecks(self, relax: bool = True) -> "Options":
        """Report optimizer attributes added after compile as debug messages, not warnings."""
        return self._set("relax_optimizer_checks",
                         check_bool("relaxOptimizerAttributesChecks()", relax))

    def updatableNamedBuffers(self, buffers: list[str]) -> "Options":
        """The buffers copyNamedBuffersToDevice() uploads: a subset instead of every weight."""
        if isinstance(buffers, str) or not all(isinstance(b, str) for b in buffers):
            raise TypeError(f"updatableNamedBuffers() expects a list of buffer names, "
                            f"got {buffers!r}")
        self._Popart.set("updatableNamedBuffers", list(buffers))
        return self

    def anchorTensor(self, short_name: str, long_name: str, output_mode=None,
                     output_return_period: int = 1) -> "Options":
        check_str("anchorTensor(short_name)", short_name)
        check_str("anchorTensor(long_name)", long_name)
        mode = OutputMode.Default if output_mode is None else check_enum(
            "anchorTensor(output_mode)", output_mode, OutputMode)
        anchors = dict(self.anchored_tensors)
        anchors[short_name] = {"long_name": long_name, "output_mode": mode,
                               "output_return_period": output_return_period}
        return self._set("anchored_tensors", anchors)

    # --- copies, files and dictionaries ---------------------------------------------------
    def clone(self) -> "Options":
        """A deep, unfrozen copy."""
        clone = self._unfrozen_copy()  # the deep copy includes the groups and the strategy
        for group in clone._groups.values():
            object.__setattr__(group, "_frozen", False)
        return clone

    def _freeze(self):
        super()._freeze()
        for group in self._groups.values():
            group._freeze()

    @property
    def is_frozen(self) -> bool:
        return self._frozen

    def toDict(self) -> dict:
        """PopTorch's backend layout: one flat dict, enum values, no Precision or Jit options.

        The execution strategy is `execution_mode` (0 pipelined, 1 sharded, 2 phased), the
        executable cache is `cachePath`, tensor locations are `location_<kind>` dicts.
        """
        return to_flat(self)

    @classmethod
    def fromDict(cls, data: dict) -> "Options":
        """Options rebuilt from toDict()'s dict: `Options.fromDict(o.toDict()).toDict() == o.toDict()`.

        Raises:
            ValueError: for phased execution (its phases are not in the dict).
        """
        return from_flat(cls, data)

    def from_json(self, text: str) -> "Options":
        """Apply {"methodName": value_or_list_of_args, "Group.methodName": ...} from JSON."""
        calls = options_file.parse_json_text(text)
        if not isinstance(calls, dict):
            raise ValueError(f"options JSON must be an object of method: argument pairs, got {text!r}")
        return self._apply_table(calls)

    def _apply_table(self, calls: dict) -> "Options":
        for name, args in calls.items():
            args = args if isinstance(args, list) else [args]
            self._method(name)(*[_json_arg(a) for a in args])
        return self

    def loadFromFile(self, filepath: str) -> "Options":
        """Apply a file of option calls, one per line, without the `options.` prefix (lines are
        parsed, never evaluated); a .json or .toml file holds {"methodName": args} instead."""
        if str(filepath).endswith(options_file.TABLE_SUFFIXES):
            return self._apply_table(options_file.read_table(filepath))
        for number, line in enumerate(options_file.read_lines(filepath), 1):
            line = line.strip()
            if line and not line.startswith("#"):
                self._apply_call(line, f"{filepath}:{number}")
        return self

    def _method(self, dotted: str):
        options_file.check_name(dotted)
        target = self
        for part in dotted.split("."):
            try:
                target = getattr(target, part)
            except AttributeError:
                raise ValueError(f"unknown option method {dotted!r}; name a setter such as "
                                 f"'deviceIterations' or 'Training.gradientAccumulation'") from None
        if not callable(target):
            raise ValueError(f"{dotted!r} is not an option method")
        return target

    def _apply_call(self, line: str, where: str):
        try:
            call = ast.parse(line, mode="eval").body
        except SyntaxError:
            raise ValueError(f"{where}: expected a call such as deviceIterations(4), "
                             f"got {line!r}") from None
        if not isinstance(call, ast.Call):
            raise ValueError(f"{where}: expected a call such as deviceIterations(4), got {line!r}")
        self._run_call(call, where)

    def _run_call(self, call: ast.Call, where: str):
        """Run one setter call; a chain such as replicationFactor(2).deviceIterations(4) too."""
        func = call.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call):
            method = getattr(self._run_call(func.value, where), func.attr, None)
            if not callable(method) or func.attr.startswith("_"):
                raise ValueError(f"{where}: unknown option method {func.attr!r} in "
                                 f"{ast.unparse(call)!r}")
        else:
            try:
                method = self._method(ast.unparse(func))
            except ValueError as error:
                raise ValueError(f"{where}: {error}") from None
        args = [_eval_literal(a, where) for a in call.args]
        kwargs = {k.arg: _eval_literal(k.value, where) for k in call.keywords}
        return method(*args, **kwargs)

    def __repr__(self) -> str:
        lines = [f"    {k}={_shown(v)}," for k, v in self._values.items()]
        lines.append(f"    execution_strategy={self._strategy!r},")
        lines += [f"    {name}={group!r}," for name, group in self._groups.items()]
        return "Options(\n" + "\n".join(lines) + "\n)"


def _json_arg(value):
    """Turn "OutputMode.All"-style strings into enum members; leave other values alone."""
    from . import enums

    if isinstance(value, str) and "." in value:
        enum_name, _, member = value.partition(".")
        enum_type = getattr(enums, enum_name, None)
        if enum_type is not None and member in enum_type.__members__:
            return enum_type[member]
    return value


def _facade_names() -> dict:
    """What an options file may name after `poptorch.`: enums, strategies, location settings."""
    from . import enums, strategies
    from .option_groups import TensorLocationSettings

    names = {n: getattr(m, n) for m in (enums, strategies) for n in dir(m) if n[0].isupper()}
    names["TensorLocationSettings"] = TensorLocationSettings
    return names


def _resolve(path: str, where: str, shown: str):
    """poptorch.Name.Member (or a torch dtype such as torch.float16) -> the object it names."""
    options_file.check_name(path)
    first, *rest = path.split(".")
    target = _facade_names().get(first)
    for part in rest:
        target = getattr(target, part, None) if target is not None else None
    if target is None:
        target = options_file.torch_value(path)
    if target is None:
        raise ValueError(f"{where}: unknown name {shown!r}")
    return target


def _eval_literal(node: ast.AST, where: str):
    """Literals, plus poptorch.Name(...) calls and poptorch.Enum.Member attributes."""
    if isinstance(node, ast.Call):
        func = _eval_literal(node.func, where)
        if not isinstance(func, type):  # poptorch.ShardedExecution(...), never a function
            raise ValueError(f"{where}: only poptorch classes can be called, not "
                             f"{ast.unparse(node.func)!r}")
        return func(*[_eval_literal(a, where) for a in node.args],
                    **{k.arg: _eval_literal(k.value, where) for k in node.keywords})
    if isinstance(node, ast.Attribute):
        path = ast.unparse(node).removeprefix("poptorch.").removeprefix("torch.")
        return _resolve(path, where, ast.unparse(node))
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise ValueError(f"{where}: cannot read {ast.unparse(node)!r} as a value") from None


__all__ = ["Options"]
