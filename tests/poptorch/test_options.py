"""poptorch.Options and its groups: defaults, setters, validation, freezing, copies and files."""
import json

import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.errors import Error
from ipu_tutorials.poptorch._declared import declared


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    """Options read these variables at construction; start every test without them."""
    for name in ("POPTORCH_DEFAULT_OPTIONS", "POPTORCH_CACHE_DIR", "POPTORCH_IPU_MODEL",
                 "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)


def dataset(n=8):
    return torch.utils.data.TensorDataset(torch.arange(n, dtype=torch.float32))


# --- defaults ----------------------------------------------------------------------------------
def test_defaults_match_poptorch():
    # PopTorch's options dict (python/options.py: Options.__init__), its enums held as ints
    opts = poptorch.Options()
    assert opts.replication_factor == 1
    assert opts.device_iterations == 1
    assert opts.auto_round_num_ipus is False
    assert opts.output_mode == poptorch.OutputMode.Default and type(opts.output_mode) is int
    assert opts.output_return_period == 1
    assert opts.available_memory_proportion == {}
    assert opts.connection_type == 0 and type(opts.connection_type) is int
    assert opts.sync_pattern == 0 and type(opts.sync_pattern) is int
    assert opts.input_cgt == poptorch.CommGroupType.Consecutive
    # set by their setters only (createOrSet), or sent to PopART: no attribute until then
    for absent in ("random_seed", "use_model", "ipu_id", "model_name", "executable_cache_dir"):
        assert not hasattr(opts, absent)
    assert opts._value("executable_cache_dir") is None and opts._value("ipu_model") is False
    strategy = opts._execution_strategy
    assert isinstance(strategy, poptorch.PipelinedExecution)
    assert strategy._auto_stage == poptorch.AutoStage.SameAsIpu and strategy._stages is None


def test_group_defaults_match_poptorch():
    opts = poptorch.Options()
    assert opts.Training.gradient_accumulation == 1
    assert opts.Training.accumulation_and_replication_reduction_type == poptorch.ReductionType.Mean
    assert (opts.Training.meanAccumulationAndReplicationReductionStrategy
            == poptorch.MeanReductionStrategy.Post)
    # PopTorch sends these to PopART: the simulator reads them with _value
    assert opts.Training._value("auto_loss_scaling") is False
    assert opts.Precision._value("partials_type") == torch.float32
    assert opts.Precision._value("enable_stochastic_rounding") is False
    assert opts.Precision._value("enable_floating_point_exceptions") is False
    assert opts.Precision._value("half_float_casting") == poptorch.HalfFloatCastingBehavior.Default
    assert opts.Distributed.processId == 0 and opts.Distributed.numProcesses == 1
    assert not hasattr(opts.TensorLocations, "location_weight")  # until it is set
    assert not hasattr(opts, "GraphProcessing")  # no SDK had it


def test_each_options_object_has_its_own_mutable_defaults():
    first, second = poptorch.Options(), poptorch.Options()
    first.setAvailableMemoryProportion({"IPU0": 0.3})
    first.Training.gradientAccumulation(4)
    assert second.available_memory_proportion == {}
    assert second.Training.gradient_accumulation == 1


# --- chaining and setters -------------------------------------------------------------------------
def test_every_setter_returns_the_options_for_chaining(tmp_path):
    opts = poptorch.Options()
    chain = [
        lambda o: o.deviceIterations(2), lambda o: o.replicationFactor(4),
        lambda o: o.inputReplicaGrouping(2, poptorch.CommGroupType.Consecutive),
        lambda o: o.autoRoundNumIPUs(True),
        lambda o: o.setExecutionStrategy(poptorch.ShardedExecution()),
        lambda o: o.setAvailableMemoryProportion({"IPU0": 0.5}),
        lambda o: o.outputMode(poptorch.OutputMode.EveryN, 2),
        lambda o: o.randomSeed(7), lambda o: o.enableExecutableCaching(str(tmp_path)),
        lambda o: o.useIpuModel(True), lambda o: o.useOfflineIpuTarget(2),
        lambda o: o.connectionType(poptorch.ConnectionType.OnDemand),
        lambda o: o.syncPattern(poptorch.SyncPattern.SinglePipeline), lambda o: o.useIpuId(3),
        lambda o: o.logDir(str(tmp_path)), lambda o: o.modelName("net"),
        lambda o: o.enableSyntheticData(True), lambda o: o.logCycleCount(True),
        lambda o: o.enableProfiling(str(tmp_path)), lambda o: o.showCompilationProgressBar(False),
        lambda o: o.broadcastBuffers(False),
    ]
    for setter in chain:
        assert setter(opts) is opts
    assert opts.anchorTensor("g", "Gradient___x") is None  # as PopTorch's: it does not chain
    groups = [
        (opts.Training, lambda g: g.gradientAccumulation(4)),
        (opts.Training, lambda g: g.accumulationAndReplicationReductionType(
            poptorch.ReductionType.Sum)),
        (opts.Training, lambda g: g.setMeanAccumulationAndReplicationReductionStrategy(
            poptorch.MeanReductionStrategy.Running)),
        (opts.Training, lambda g: g.setAutomaticLossScaling(True)),
        (opts.Precision, lambda g: g.setPartialsType(torch.half)),
        (opts.Precision, lambda g: g.enableStochasticRounding(True)),
        (opts.Precision, lambda g: g.enableFloatingPointExceptions(True)),
        (opts.Precision, lambda g: g.halfFloatCasting(
            poptorch.HalfFloatCastingBehavior.HalfUpcastToFloat)),
        (opts.TensorLocations, lambda g: g.setWeightLocation(poptorch.TensorLocationSettings())),
        (opts.Distributed, lambda g: g.configureProcessId(1, 2)),
        (opts.Jit, lambda g: g.traceModel(True)),
        (opts._Popart, lambda g: g.set("defaultPrefetchBufferingDepth", 3)),
        (opts._Popart, lambda g: g.setEngineOptions({"debug.instrument": "true"})),
        (opts._Popart, lambda g: g.setPatterns({"PadSum": True})),
    ]
    for group, setter in groups:
        assert setter(group) is group


def test_setters_store_their_values(tmp_path):
    opts = (poptorch.Options().deviceIterations(3).replicationFactor(2).autoRoundNumIPUs(True)
            .outputMode(poptorch.OutputMode.EveryN, 5).useIpuId(1).modelName("m")
            .enableExecutableCaching(str(tmp_path)).setAvailableMemoryProportion({"IPU1": 0.25}))
    assert (opts.device_iterations, opts.replication_factor) == (3, 2)
    assert opts.auto_round_num_ipus is True
    assert (opts.output_mode, opts.output_return_period) == (poptorch.OutputMode.EveryN, 5)
    assert opts.ipu_id == 1 and opts.model_name == "m"
    assert opts._value("executable_cache_dir") == str(tmp_path)
    assert opts.available_memory_proportion == {1: 0.25}  # PopTorch keys it by the IPU's number
    assert opts.enableExecutableCaching(None)._value("executable_cache_dir") is None
    opts.outputMode(poptorch.OutputMode.All)
    assert opts.output_return_period == 1  # back to the default when leaving EveryN


def test_anchor_tensor_records_mode_and_period():
    opts = poptorch.Options()
    opts.anchorTensor("grad", "Gradient___fc.weight", poptorch.OutputMode.All)
    opts.anchorTensor("every", "Gradient___fc.bias", poptorch.OutputMode.EveryN, 3)
    opts.anchorTensor("plain", "UpdatedVar___fc.bias")
    # PopTorch's list: [PopART name, no mode given, mode, period (1 unless EveryN)]
    assert opts.anchored_tensors == {
        "grad": ["Gradient___fc.weight", False, poptorch.OutputMode.All, 1],
        "every": ["Gradient___fc.bias", False, poptorch.OutputMode.EveryN, 3],
        "plain": ["UpdatedVar___fc.bias", True, None, 1]}


def test_training_setters_store_their_values():
    training = poptorch.Options().Training
    training.gradientAccumulation(8).accumulationAndReplicationReductionType(
        poptorch.ReductionType.Sum).setMeanAccumulationAndReplicationReductionStrategy(
        poptorch.MeanReductionStrategy.Running)
    assert training.gradient_accumulation == 8
    assert training.accumulation_and_replication_reduction_type == poptorch.ReductionType.Sum
    assert (training.meanAccumulationAndReplicationReductionStrategy
            == poptorch.MeanReductionStrategy.Running)


@pytest.mark.parametrize("dtype", [torch.float, torch.float32, torch.half, torch.float16])
def test_partials_type_accepts_float_and_half(dtype):
    assert poptorch.Options().Precision.setPartialsType(dtype)._value("partials_type") == dtype


def test_popart_options_are_recorded():
    popart = poptorch.Options()._Popart
    popart.set("defaultPrefetchBufferingDepth", 3).setEngineOptions({"opt": "1"})
    popart.setPatterns({"PadSum": True}, 1)
    assert popart.options == {"defaultPrefetchBufferingDepth": 3, "engineOptions": {"opt": "1"},
                              "patternsLevel": 1, "patterns": {"PadSum": True}}


# --- bad input -------------------------------------------------------------------------------
@pytest.mark.parametrize("setter, bad, error, message", [
    ("deviceIterations", 0, ValueError, r"deviceIterations\(\) must be a positive integer, got 0"),
    ("deviceIterations", -2, ValueError, r"must be a positive integer, got -2"),
    ("deviceIterations", 2.0, AssertionError, r"deviceIterations\(\) expects an integer, got float 2.0"),
    ("deviceIterations", True, AssertionError, r"expects an integer, got bool True"),
    ("replicationFactor", 0, ValueError, r"replicationFactor\(\) must be a positive integer, got 0"),
    ("replicationFactor", "2", AssertionError, r"replicationFactor\(\) expects an integer, got str '2'"),
    ("autoRoundNumIPUs", 1, AssertionError, r"autoRoundNumIPUs\(\) expects True or False, got int 1"),
    ("useIpuModel", "yes", AssertionError, r"useIpuModel\(\) expects True or False"),
    ("randomSeed", -1, ValueError, r"randomSeed\(\) must be an integer >= 0, got -1"),
    ("randomSeed", 1.5, AssertionError, r"randomSeed\(\) expects an integer, got float 1.5"),
    ("useIpuId", -1, ValueError, r"useIpuId\(\) must be an integer >= 0, got -1"),
    ("logDir", 3, AssertionError, r"logDir\(\) expects a string, got int 3"),
    ("modelName", None, AssertionError, r"modelName\(\) expects a string, got NoneType"),
    ("enableSyntheticData", 0, AssertionError, r"enableSyntheticData\(\) expects True or False"),
    ("logCycleCount", None, AssertionError, r"logCycleCount\(\) expects True or False"),
    ("enableProfiling", 5, AssertionError, r"enableProfiling\(\) expects a string, got int 5"),
    ("enableExecutableCaching", 5, AssertionError, r"enableExecutableCaching\(\) expects a string"),
    ("showCompilationProgressBar", "no", AssertionError, r"showCompilationProgressBar\(\) expects True"),
    ("broadcastBuffers", 1, AssertionError, r"broadcastBuffers\(\) expects True or False"),
    ("connectionType", "Never", AssertionError, r"connectionType\(\) expects one of "
                                           r"ConnectionType.Always, .*; got 'Never'"),
    ("syncPattern", 0, AssertionError, r"syncPattern\(\) expects one of SyncPattern.Full"),
    ("setExecutionStrategy", "pipelined", AssertionError,
     r"setExecutionStrategy\(\) expects one of poptorch.PipelinedExecution, "
     r"poptorch.ShardedExecution, .*; got str"),
    ("setAvailableMemoryProportion", 0.5, AssertionError, r"expects a dict such as \{\"IPU0\": 0.5\}"),
    ("useOfflineIpuTarget", 5, ValueError, r"unknown IPU version 5"),
])
def test_setter_rejects_bad_input_and_says_why(setter, bad, error, message):
    opts = poptorch.Options()
    before = opts.toDict()
    with pytest.raises(error, match=message):
        getattr(opts, setter)(bad)
    assert opts.toDict() == before  # a refused value changes nothing


@pytest.mark.parametrize("proportions, message", [
    ({"ipu0": 0.5}, r"a dictionary of \{\"IPU0\": 0.5\} where the 0 in IPU is the index of the "
                    r"IPU .*Invalid key: 'ipu0'"),
    ({"IPU": 0.5}, r"Invalid key: 'IPU'"),
    ({"IPUx": 0.5}, r"Invalid key: 'IPUx'"),
    ({0: 0.5}, r"Invalid key: 0"),
])
def test_available_memory_proportion_keys_must_name_ipus(proportions, message):
    with pytest.raises(AssertionError, match=message):  # PopTorch asserts
        poptorch.Options().setAvailableMemoryProportion(proportions)


@pytest.mark.parametrize("value, error, message", [
    (0.0, ValueError, r"\['IPU0'\] must be in \(0, 1\], got 0.0"),
    (1.5, ValueError, r"must be in \(0, 1\], got 1.5"),
    ("0.5", AssertionError, r"expects a number between 0 and 1, got '0.5'"),
])
def test_available_memory_proportion_values_are_fractions(value, error, message):
    with pytest.raises(error, match=message):
        poptorch.Options().setAvailableMemoryProportion({"IPU0": value})


def test_output_mode_every_n_needs_a_positive_period():
    opts = poptorch.Options()
    # PopTorch asserts both rules (python/options.py: outputMode)
    with pytest.raises(AssertionError, match=r"EveryN anchor must have output_return_period set "
                                             r"to valid positive integer, e.g. "
                                             r"outputMode\(OutputMode.EveryN, 5\)"):
        opts.outputMode(poptorch.OutputMode.EveryN)
    with pytest.raises(AssertionError, match=r"EveryN anchor must have output_return_period"):
        opts.outputMode(poptorch.OutputMode.EveryN, 0)
    with pytest.raises(AssertionError, match=r"outputMode\(\) expects one of OutputMode.Final, "
                                             r"OutputMode.EveryN, .*; got 'all'"):
        opts.outputMode("all")
    assert opts.output_mode == poptorch.OutputMode.Default


def test_a_period_given_with_another_mode_is_ignored_as_poptorch_does():
    opts = poptorch.Options().outputMode(poptorch.OutputMode.All, 2)
    assert opts.output_mode == poptorch.OutputMode.All and opts.output_return_period == 1


def test_input_replica_grouping_size_must_divide_replication_factor():
    opts = poptorch.Options().replicationFactor(4)
    with pytest.raises(ValueError, match=r"input_group_size must be a factor of "
                                         r"replication_factor; 3 does not divide 4"):
        opts.inputReplicaGrouping(3, poptorch.CommGroupType.Consecutive)
    with pytest.raises(ValueError, match=r"input_group_size cannot be larger than "
                                         r"replication_factor \(8 > 4\)"):
        opts.inputReplicaGrouping(8, poptorch.CommGroupType.Consecutive)
    with pytest.raises(ValueError, match=r"input_group_type cannot be All"):
        opts.inputReplicaGrouping(2, poptorch.CommGroupType.All)
    with pytest.raises(AssertionError, match=r"input_group_type\) expects one of "
                                             r"CommGroupType.All"):
        opts.inputReplicaGrouping(2, "Consecutive")
    opts.inputReplicaGrouping(2, poptorch.CommGroupType.Orthogonal)
    assert (opts.input_group_size, opts.input_cgt) == (2, poptorch.CommGroupType.Orthogonal)
    opts.inputReplicaGrouping(2, poptorch.CommGroupType.NoGrouping)  # as PopTorch: groups of 1
    assert (opts.input_group_size, opts.input_cgt) == (1, poptorch.CommGroupType.Consecutive)


@pytest.mark.parametrize("group, setter, bad, error, message", [
    ("Training", "gradientAccumulation", 0, ValueError,
     r"Training.gradientAccumulation\(\) must be a positive integer, got 0"),
    ("Training", "gradientAccumulation", 2.5, AssertionError,
     r"Training.gradientAccumulation\(\) expects an integer, got float 2.5"),
    ("Training", "accumulationAndReplicationReductionType", poptorch.ReductionType.NoReduction,
     ValueError, r"gradients must be reduced; use ReductionType.Mean \(the default\) or "
                 r"ReductionType.Sum"),
    ("Training", "accumulationAndReplicationReductionType", "Mean", AssertionError,
     r"expects one of ReductionType.Sum, ReductionType.Mean"),
    ("Training", "setMeanAccumulationAndReplicationReductionStrategy", 1, AssertionError,
     r"expects one of MeanReductionStrategy.Running, MeanReductionStrategy.Post; got 1"),
    ("Training", "setAutomaticLossScaling", "on", AssertionError,
     r"Training.setAutomaticLossScaling\(\) expects True or False"),
    ("Precision", "setPartialsType", torch.int32, ValueError,
     r"setPartialsType\(\) accepts torch.float or torch.half, got torch.int32"),
    ("Precision", "setPartialsType", torch.bfloat16, ValueError, r"got torch.bfloat16"),
    ("Precision", "enableStochasticRounding", 1, AssertionError,
     r"Precision.enableStochasticRounding\(\) expects True or False, got int 1"),
    ("Precision", "enableFloatingPointExceptions", None, AssertionError, r"expects True or False"),
    ("Precision", "halfFloatCasting", 0, AssertionError,
     r"halfFloatCasting\(\) expects one of HalfFloatCastingBehavior.FloatDowncastToHalf"),
    ("TensorLocations", "setWeightLocation", {"onChip": 0}, AssertionError,
     r"setWeightLocation\(\) expects a poptorch.TensorLocationSettings, got dict"),
    ("TensorLocations", "setOptimizerLocation", None, AssertionError, r"setOptimizerLocation\(\)"),
    ("TensorLocations", "setActivationLocation", 1, AssertionError, r"setActivationLocation\(\)"),
    ("TensorLocations", "setAccumulatorLocation", "x", AssertionError, r"setAccumulatorLocation\(\)"),
    ("Jit", "traceModel", 1, AssertionError, r"Jit.traceModel\(\) expects True or False"),
    ("_Popart", "setEngineOptions", [("a", 1)], TypeError,
     r"setEngineOptions\(\) expects a dict, got list"),
    ("_Popart", "setPatterns", None, TypeError, r"setPatterns\(\) expects a dict, got NoneType"),
])
def test_group_setter_rejects_bad_input(group, setter, bad, error, message):
    target = getattr(poptorch.Options(), group)
    before = target.toDict()
    with pytest.raises(error, match=message):
        getattr(target, setter)(bad)
    assert target.toDict() == before


def test_popart_set_needs_a_string_key():
    with pytest.raises(TypeError, match=r"_Popart.set\(\) expects a string key, got 3"):
        poptorch.Options()._Popart.set(3, "x")


@pytest.mark.parametrize("pid, n, error, message", [
    (2, 2, ValueError, r"process_id must be below num_processes, got 2 of 2"),
    (-1, 2, ValueError, r"process_id\) must be an integer >= 0, got -1"),
    (0, 0, ValueError, r"num_processes\) must be a positive integer, got 0"),
])
def test_distributed_process_id_must_fit(pid, n, error, message):
    with pytest.raises(error, match=message):
        poptorch.Options().Distributed.configureProcessId(pid, n)


def test_distributed_reads_the_mpi_environment(monkeypatch):
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "3")
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "4")
    distributed = poptorch.Options().Distributed
    assert (distributed.processId, distributed.numProcesses) == (3, 4)


def test_options_are_assigned_as_poptorch_sets_them_and_unknown_names_are_refused():
    opts = poptorch.Options()
    opts.device_iterations = 4  # PopTorch's OptionsDict: set(device_iterations=4)
    assert opts.device_iterations == 4
    with pytest.raises(AssertionError, match=r"Unexpected type <class 'str'> for option "
                                             r"device_iterations"):
        opts.device_iterations = "4"
    with pytest.raises(AssertionError, match=r"Invalid option executable_cache_dir"):
        opts.executable_cache_dir = "/tmp"  # the simulator's: set by its setter only
    with pytest.raises(AttributeError, match=r"Options has no option 'deviceIteration'; its "
                                             r"options are: .*device_iterations"):
        opts.deviceIteration
    with pytest.raises(AttributeError, match=r"_TrainingOptions has no option 'accumulation'"):
        opts.Training.accumulation


# --- freezing and clone ------------------------------------------------------------------------------
def test_dataloader_freezes_the_options():
    opts = poptorch.Options().deviceIterations(2)
    poptorch.DataLoader(opts, dataset(), batch_size=1)
    assert opts._frozen
    # PopTorch's class and words (python/_options_impl.py: checkIsFrozen), then the fix
    frozen_message = (r"Can't modify frozen Options \('device_iterations'\): a poptorch.DataLoader "
                      r"or wrapped model already uses them. Call options.clone\(\) and change "
                      r"the copy instead.")
    with pytest.raises(AttributeError, match=frozen_message):
        opts.deviceIterations(4)
    with pytest.raises(AttributeError, match=r"frozen Options \('gradient_accumulation'\)"):
        opts.Training.gradientAccumulation(2)
    with pytest.raises(AttributeError, match=r"frozen Options \('partials_type'\)"):
        opts.Precision.setPartialsType(torch.half)
    with pytest.raises(AttributeError, match=r"frozen Options \('location_weight'\)"):
        opts.TensorLocations.setWeightLocation(poptorch.TensorLocationSettings())
    with pytest.raises(AttributeError, match=r"frozen Options \(the execution strategy\)"):
        opts.setExecutionStrategy(poptorch.ShardedExecution())
    with pytest.raises(AttributeError, match=r"frozen"):
        opts.set(device_iterations=4)
    with pytest.raises(AttributeError, match=r"frozen"):
        opts._Popart.set("key", 1)
    assert opts.device_iterations == 2
    assert opts.Training.gradient_accumulation == 1


def test_clone_is_deep_and_unfrozen():
    opts = poptorch.Options().deviceIterations(2).setAvailableMemoryProportion({"IPU0": 0.4})
    opts.Training.gradientAccumulation(3)
    opts.setExecutionStrategy(poptorch.PipelinedExecution(poptorch.Stage("A").ipu(0)))
    poptorch.DataLoader(opts, dataset(12), batch_size=1)
    assert opts._frozen

    copy = opts.clone()
    assert not copy._frozen
    assert repr(copy) == repr(opts)
    copy.deviceIterations(5).setAvailableMemoryProportion({"IPU1": 0.2})
    copy.Training.gradientAccumulation(7)
    copy.Precision.setPartialsType(torch.half)
    copy._execution_strategy.stage("A").ipu(3)  # mutating the copy's strategy object
    assert opts.device_iterations == 2
    assert opts.available_memory_proportion == {0: 0.4}
    assert opts.Training.gradient_accumulation == 3
    assert opts.Precision._value("partials_type") == torch.float32
    assert opts._execution_strategy.stage("A")._ipu == 0


def test_clone_of_unfrozen_options_does_not_share_nested_values():
    opts = poptorch.Options()
    opts.anchorTensor("a", "A")
    copy = opts.clone()
    copy.anchorTensor("b", "B")
    assert set(opts.anchored_tensors) == {"a"}
    assert set(copy.anchored_tensors) == {"a", "b"}


# --- repr and set() ---------------------------------------------------------------------------------
def test_repr_shows_every_option_and_group():
    opts = poptorch.Options().deviceIterations(3)
    opts.Training.gradientAccumulation(5)
    opts._Popart.set("defaultPrefetchBufferingDepth", 3)
    text = repr(opts)
    assert text.startswith("Options(\n") and text.endswith("\n)")
    for option in declared(poptorch.Options):
        assert (f"    {option.name}=" in text) is not option.optional  # optional: once set
    for group in ("Training", "Precision", "TensorLocations", "Distributed", "Jit", "_Popart"):
        assert f"    {group}=_" in text
    assert "device_iterations=3," in text
    assert "output_mode=OutputMode.Default," in text
    assert "execution_strategy=PipelinedExecution(AutoStage.SameAsIpu)," in text
    assert "gradient_accumulation=5" in text
    assert "_PopartOptions(defaultPrefetchBufferingDepth=3)" in text


def test_set_changes_known_keys_of_the_right_type():
    opts = poptorch.Options()
    assert opts.set(device_iterations=4, log_dir="/tmp/logs") is None  # as PopTorch's
    assert opts.device_iterations == 4 and opts.log_dir == "/tmp/logs"
    opts.Training.set(gradient_accumulation=3)
    assert opts.Training.gradient_accumulation == 3
    opts.set(output_mode=poptorch.OutputMode.Sum.value)  # PopTorch holds the int
    assert opts.output_mode == 3 and opts._value("output_mode") is poptorch.OutputMode.Sum


def test_set_rejects_unknown_keys_and_wrong_types():
    opts = poptorch.Options()
    # PopTorch's asserts and words (python/_options_impl.py: OptionsDict.set)
    with pytest.raises(AssertionError, match=r"Invalid option device_iteration, valid options "
                                             r"are .*device_iterations"):
        opts.set(device_iteration=4)
    with pytest.raises(AssertionError, match=r"Unexpected type <class 'str'> for option "
                                             r"device_iterations. Expected <class 'int'>"):
        opts.set(device_iterations="4")
    with pytest.raises(AssertionError, match=r"Unexpected type <class 'bool'> for option "
                                             r"device_iterations"):
        opts.set(device_iterations=True)
    with pytest.raises(AssertionError, match=r"Unexpected type <class 'str'> for option "
                                             r"output_mode"):
        opts.set(output_mode="All")
    with pytest.raises(AssertionError, match=r"for option gradient_accumulation"):
        opts.Training.set(gradient_accumulation=2.0)
    assert opts.device_iterations == 1 and opts.output_mode == poptorch.OutputMode.Default


# --- JSON, environment and files ----------------------------------------------------------------------
def by_hand():
    opts = poptorch.Options().deviceIterations(2).replicationFactor(1).logDir("/tmp")
    opts.enableSyntheticData(True).connectionType(poptorch.ConnectionType.OnDemand)
    opts.outputMode(poptorch.OutputMode.EveryN, 3)
    opts.Precision.enableFloatingPointExceptions(True)
    opts._Popart.set("saveInitializersToFile", "my_file.onnx")
    return opts


JSON = json.dumps({"deviceIterations": 2, "replicationFactor": 1, "logDir": "/tmp",
                   "enableSyntheticData": True, "connectionType": "ConnectionType.OnDemand",
                   "outputMode": ["OutputMode.EveryN", 3],
                   "Precision.enableFloatingPointExceptions": True,
                   "_Popart.set": ["saveInitializersToFile", "my_file.onnx"]})


def test_from_json_equals_options_set_by_hand():
    opts = poptorch.Options()
    assert opts.from_json(JSON) is opts
    assert repr(opts) == repr(by_hand())


def test_default_options_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("POPTORCH_DEFAULT_OPTIONS", JSON)
    assert repr(poptorch.Options()) == repr(by_hand())


@pytest.mark.parametrize("text, error, message", [
    ('{"deviceIterations": 0}', ValueError, r"deviceIterations\(\) must be a positive integer, "
                                            r"got 0"),
    # was wrong: bad JSON said "options JSON is not valid JSON", not which variable held it
    ("{deviceIterations: 2}", ValueError, r"options JSON is not valid JSON \(Expecting property "
                                          r"name enclosed in double quotes"),
    ('{"deviceIterations": "2"}', AssertionError, r"deviceIterations\(\) expects an integer"),
])
def test_bad_default_options_in_the_environment_name_the_variable(monkeypatch, text, error,
                                                                  message):
    monkeypatch.setenv("POPTORCH_DEFAULT_OPTIONS", text)
    with pytest.raises(error, match=r"^POPTORCH_DEFAULT_OPTIONS: " + message) as raised:
        poptorch.Options()
    assert "\n" not in str(raised.value)  # one line


@pytest.mark.parametrize("text, message", [
    ("{deviceIterations: 2}", r"options JSON is not valid JSON"),
    ("[1, 2]", r"options JSON must be an object of method: argument pairs, got '\[1, 2\]'"),
    ('{"deviceIteration": 2}', r"unknown option method 'deviceIteration'; name a setter such as "
                               r"'deviceIterations'"),
    ('{"Training.gradientAccumulate": 2}', r"unknown option method 'Training.gradientAccumulate'"),
    ('{"device_iterations": 2}', r"'device_iterations' is not an option method"),
])
def test_from_json_rejects_bad_text(text, message):
    with pytest.raises(ValueError, match=message):
        poptorch.Options().from_json(text)


def test_cache_dir_and_ipu_model_come_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("POPTORCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("POPTORCH_IPU_MODEL", "1")
    opts = poptorch.Options()
    assert opts._value("executable_cache_dir") == str(tmp_path)
    assert opts.use_model is True
    assert opts.useIpuModel(False).use_model is False  # the setter overrides the variable


def test_load_from_file(tmp_path):
    path = tmp_path / "options.conf"
    path.write_text("\n".join([
        "# a comment, then a blank line",
        "",
        "deviceIterations(4)",
        '  setExecutionStrategy(poptorch.ShardedExecution("A"))  ',
        "Training.gradientAccumulation(2)",
        "outputMode(poptorch.OutputMode.EveryN, output_return_period=2)",
        'setAvailableMemoryProportion({"IPU0": 0.3})',
        "Precision.setPartialsType(torch.float16)",
        "replicationFactor(2).autoRoundNumIPUs(True)",
    ]))
    opts = poptorch.Options()
    assert opts.loadFromFile(str(path)) is opts
    assert opts.device_iterations == 4
    assert isinstance(opts._execution_strategy, poptorch.ShardedExecution)
    assert opts._execution_strategy.stage("A").blocks == ("A",)
    assert opts.Training.gradient_accumulation == 2
    assert (opts.output_mode, opts.output_return_period) == (poptorch.OutputMode.EveryN, 2)
    assert opts.available_memory_proportion == {0: 0.3}
    assert opts.Precision._value("partials_type") == torch.float16
    assert opts.replication_factor == 2 and opts.auto_round_num_ipus is True


@pytest.mark.parametrize("line, error, message", [
    ("deviceIterations = 4", ValueError,
     r"options.conf:2: expected a call such as deviceIterations\(4\), got 'deviceIterations = 4'"),
    ("deviceIterations(", ValueError, r"options.conf:2: expected a call"),
    ("foo(3)", ValueError, r"options.conf:2: unknown option method 'foo'"),
    ("deviceIterations(2).foo(3)", ValueError,
     r"options.conf:2: unknown option method 'foo' in 'deviceIterations\(2\).foo\(3\)'"),
    ("setExecutionStrategy(poptorch.Nope('A'))", ValueError,
     r"options.conf:2: unknown name 'poptorch.Nope'"),
    ("deviceIterations(x)", ValueError, r"options.conf:2: cannot read 'x' as a value"),
    ("deviceIterations(-4)", ValueError, r"deviceIterations\(\) must be a positive integer, got -4"),
])
def test_load_from_file_reports_the_bad_line(tmp_path, line, error, message):
    path = tmp_path / "options.conf"
    path.write_text(f"replicationFactor(2)\n{line}\n")
    with pytest.raises(error, match=message):
        poptorch.Options().loadFromFile(str(path))


# --- enums ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("enum, values", [
    (poptorch.OutputMode, {"Final": 0, "EveryN": 1, "All": 2, "Sum": 3, "Default": 4}),
    (poptorch.DataLoaderMode, {"Sync": 0, "Async": 1, "AsyncRebatched": 2}),
    (poptorch.AutoStage, {"SameAsIpu": 0, "AutoIncrement": 1}),
    (poptorch.Liveness, {"AlwaysLive": 0, "OffChipAfterFwd": 1, "OffChipAfterFwdNoOverlap": 2,
                         "OffChipAfterEachPhase": 3}),
    (poptorch.HalfFloatCastingBehavior, {"FloatDowncastToHalf": 0, "HalfUpcastToFloat": 1,
                                         "Default": 2}),
    (poptorch.ReductionType, {"Sum": 0, "Mean": 1, "NoReduction": 2}),
    (poptorch.MeanReductionStrategy, {"Running": 0, "Post": 1}),
    (poptorch.SyncPattern, {"Full": 0, "SinglePipeline": 1, "ReplicaAndLadder": 2}),
    (poptorch.ConnectionType, {"Always": 0, "OnDemand": 1, "Never": 2}),
    (poptorch.CommGroupType, {"All": 0, "Consecutive": 1, "Orthogonal": 2, "NoGrouping": 3}),
    (poptorch.MultiConvPlanType, {"Parallel": 0, "Serial": 1}),
    (poptorch.MatMulSerializationMode, {"InputChannels": "input_channels",
                                        "ReducingDim": "reducing_dim",
                                        "OutputChannels": "output_channels", "Disabled": "none"}),
])
def test_enum_names_and_values(enum, values):
    assert {m.name: m.value for m in enum} == values


def test_deepcopy_of_frozen_options_is_modifiable():
    import copy as copying

    opts = poptorch.Options().deviceIterations(2)
    model = poptorch.inferenceModel(torch.nn.Identity(), opts)
    assert opts._frozen and model.options._frozen
    for frozen in (opts, model.options):
        fresh = copying.deepcopy(frozen)
        fresh.deviceIterations(4)
        fresh.Training.gradientAccumulation(5)
        assert fresh.device_iterations == 4 and fresh.Training.gradient_accumulation == 5
    assert opts.device_iterations == 2 and opts._frozen


def test_float16_accumulation_switches_to_running_means_except_the_combined_accumulator():
    net = torch.nn.Linear(2, 1)
    running = poptorch.MeanReductionStrategy.Running
    separate = poptorch.trainingModel(net, optimizer=poptorch.optim.SGD(
        net.parameters(), lr=0.1, accum_type=torch.float16))
    strategy = separate.options.Training.meanAccumulationAndReplicationReductionStrategy
    assert strategy == running
    separate.destroy()
    combined = poptorch.trainingModel(net, optimizer=poptorch.optim.SGD(
        net.parameters(), lr=0.1, accum_type=torch.float16, use_combined_accum=True))
    assert combined.options.Training.meanAccumulationAndReplicationReductionStrategy != running


def test_available_memory_proportion_takes_poptorchs_keyword():
    opts = poptorch.Options().setAvailableMemoryProportion(available_memory_proportion={"IPU0": 0.3})
    assert opts.available_memory_proportion == {0: 0.3}


def test_updatable_named_buffers_are_recorded_and_must_be_names():
    opts = poptorch.Options().updatableNamedBuffers(["bn.running_mean"])
    assert opts._Popart.options["updatableNamedBuffers"] == ["bn.running_mean"]
    with pytest.raises(TypeError, match=r"updatableNamedBuffers\(\) expects a list of buffer "
                       r"names, got 'bn.running_mean'"):
        poptorch.Options().updatableNamedBuffers("bn.running_mean")


def test_default_output_mode_is_resolved_by_each_wrapped_model():
    opts = poptorch.Options()
    model = torch.nn.Linear(2, 2)
    assert opts.defaultOutputMode()
    assert poptorch.inferenceModel(model, opts).options.output_mode == poptorch.OutputMode.All
    assert opts.defaultOutputMode()  # the caller's options are left as they were
    assert not poptorch.Options().outputMode(poptorch.OutputMode.Sum).defaultOutputMode()
