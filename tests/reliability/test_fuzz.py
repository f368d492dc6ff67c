"""Random values into Options, IPUConfig, DataLoader and the command lines: it works, or it is
the project's own clear error (TypeError, ValueError, poptorch.Error, MemoryError, and the
AssertionError PopTorch's setters raise; exit 2 for a flag), never an exception from deep
inside, never a hang (conftest bounds each test)."""
import pytest
import torch

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import lightning_mnist  # noqa: E402
import mnist_pipeline  # noqa: E402
from ipu_tutorials import poptorch  # noqa: E402
from ipu_tutorials.distributed import poprun  # noqa: E402
from ipu_tutorials.optimum.graphcore import IPUConfig  # noqa: E402
from ipu_tutorials.optimum.graphcore._config_fields import FIELDS  # noqa: E402

# PopTorch asserts its setters' argument types, so the facade's wrong-type errors are
# AssertionErrors too (tests/peer/test_surface.py)
CLEAR = (TypeError, ValueError, AssertionError, poptorch.Error, MemoryError)
FUZZ = settings(max_examples=150, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow,
                                       HealthCheck.function_scoped_fixture])

ENUMS = [m for e in (poptorch.OutputMode, poptorch.ReductionType, poptorch.SyncPattern,
                     poptorch.ConnectionType, poptorch.MeanReductionStrategy,
                     poptorch.HalfFloatCastingBehavior) for m in e]
values = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.integers(-3, 40),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
    st.lists(st.integers(-3, 20), max_size=5), st.lists(st.floats(), max_size=3),
    st.dictionaries(st.text(max_size=6), st.floats(), max_size=3), st.sampled_from(ENUMS),
    st.sampled_from([torch.float16, torch.float32, torch.int8]))

# setters that only record a value (the ones naming folders or files are left out: fuzzing
# them would create random folders)
SETTERS = ["anchorTensor", "autoRoundNumIPUs", "broadcastBuffers", "connectionType",
           "deviceIterations", "enableSyntheticData", "inputReplicaGrouping", "logCycleCount",
           "modelName", "outputMode", "randomSeed", "replicationFactor",
           "setAvailableMemoryProportion", "showCompilationProgressBar", "syncPattern",
           "useIpuId", "useIpuModel", "useOfflineIpuTarget", "from_json",
           "Training.accumulationAndReplicationReductionType", "Training.gradientAccumulation",
           "Training.setAutomaticLossScaling",
           "Training.setMeanAccumulationAndReplicationReductionStrategy",
           "Precision.enableFloatingPointExceptions", "Precision.enableStochasticRounding",
           "Precision.halfFloatCasting", "Precision.setPartialsType",
           "Distributed.configureProcessId", "Jit.traceModel"]


def is_clear(error: BaseException) -> bool:
    message = str(error)
    return isinstance(error, CLEAR) and bool(message.strip())


def setter(options, dotted: str):
    target = options
    for part in dotted.split("."):
        target = getattr(target, part)
    return target


@FUZZ
@given(calls=st.lists(st.tuples(st.sampled_from(SETTERS), st.lists(values, max_size=3)),
                      min_size=1, max_size=4))
def test_options_setters_take_random_values(calls):
    options = poptorch.Options()
    for name, args in calls:
        try:
            setter(options, name)(*args)
        except Exception as error:  # noqa: BLE001 (what we check is which kind it is)
            assert is_clear(error), f"{name}{tuple(args)!r} raised {error!r}"


@FUZZ
@given(config=st.dictionaries(st.sampled_from(sorted(FIELDS)), values, max_size=4))
def test_ipuconfig_takes_random_values(config):
    try:
        IPUConfig(**config).to_json_string()
    except Exception as error:  # noqa: BLE001
        assert is_clear(error), f"IPUConfig(**{config!r}) raised {error!r}"


class Samples(torch.utils.data.Dataset):
    def __len__(self):
        return 40

    def __getitem__(self, index):
        return torch.full((3,), float(index)), index


@FUZZ
@given(batch_size=values, num_workers=st.sampled_from([0, -1, 1.5, "2", None]), shuffle=values,
       drop_last=values, device_iterations=st.integers(-2, 10**12),
       mode=st.sampled_from(list(poptorch.DataLoaderMode)))
def test_dataloader_takes_random_values(batch_size, num_workers, shuffle, drop_last,
                                        device_iterations, mode):
    try:
        options = poptorch.Options().deviceIterations(device_iterations)
        loader = poptorch.DataLoader(options, Samples(), batch_size=batch_size,
                                     num_workers=num_workers,
                                     shuffle=shuffle, drop_last=drop_last, mode=mode)
        for _ in loader:
            break
        loader.terminate()
    except Exception as error:  # noqa: BLE001
        assert is_clear(error), repr(error)


@FUZZ
@given(batch_size=st.integers(10**6, 10**12))
def test_a_batch_too_big_for_the_host_is_refused_before_allocating(batch_size):
    class Images(torch.utils.data.Dataset):
        def __len__(self):
            return 10**12

        def __getitem__(self, index):
            return torch.zeros(3, 224, 224), 0

    with pytest.raises(MemoryError, match=r"one call's batch .* needs about .* GiB .* but the "
                                          r"host has .* GiB available; lower batch_size"):
        poptorch.DataLoader(poptorch.Options(), Images(), batch_size=batch_size)


FLAG_WORDS = st.one_of(st.sampled_from(["0", "-1", "1", "7", "nan", "inf", "-inf", "1e9",
                                        "1000000000", "abc", "", "2**63", str(2**64), "0.5",
                                        "pipelined", "sharded", "phased", "--", "-"]),
                       st.text(max_size=8))


def argv_for(parser_flags: list[str]):
    pair = st.tuples(st.sampled_from(parser_flags), FLAG_WORDS).map(list)
    return st.lists(pair, max_size=4).map(lambda pairs: [w for p in pairs for w in p])


def parses_or_exits_2(parse, argv):
    try:
        parse(argv)
    except SystemExit as stop:
        assert stop.code in (0, 2), f"{argv!r} exited with {stop.code}"


MNIST_FLAGS = ["--batch-size", "--device-iterations", "--gradient-accumulation",
               "--test-batch-size", "--epochs", "--learning-rate", "--replication-factor",
               "--strategy", "--dataset", "--seed"]
LIGHTNING_FLAGS = ["--devices", "--strategy", "--batch-size", "--accumulate-grad-batches",
                   "--device-iterations", "--epochs", "--learning-rate", "--dataset", "--seed"]
POPRUN_FLAGS = ["--num-instances", "--num-replicas", "--ipus-per-replica", "--rdzv-port",
                "--instance-timeout", "--only-output-from-instance", "--host", "--host-index",
                "--mpi-global-args", "--mpi-local-args", "--update-partition", "--num-ilds"]


@FUZZ
@given(argv=argv_for(MNIST_FLAGS))
def test_mnist_pipeline_flags(argv, capsys):
    parses_or_exits_2(mnist_pipeline.parse_args, argv)


@FUZZ
@given(argv=argv_for(LIGHTNING_FLAGS))
def test_lightning_mnist_flags(argv, capsys):
    parses_or_exits_2(lightning_mnist.parse_args, argv)


@FUZZ
@given(argv=argv_for(POPRUN_FLAGS))
def test_poprun_flags(argv, capsys):
    parses_or_exits_2(poprun.parse_args, argv + ["python", "train.py"])


NON_FINITE = st.sampled_from([float("nan"), float("inf"), float("-inf")])
FLOAT_FIELDS = [name for name in FIELDS if "proportion" in name]


@FUZZ
@given(name=st.sampled_from(FLOAT_FIELDS), bad=NON_FINITE, as_list=st.booleans())
def test_ipuconfig_refuses_non_finite_numbers(name, bad, as_list):
    with pytest.raises(ValueError, match=f"`IPUConfig` attribute `{name}` must hold finite "
                                         f"numbers"):
        IPUConfig(**{name: [0.2, bad] if as_list else bad})


@FUZZ
@given(bad=NON_FINITE, call=st.sampled_from([
    lambda o, v: o.setAvailableMemoryProportion({"IPU0": v}),
    lambda o, v: o.randomSeed(v), lambda o, v: o.deviceIterations(v),
    lambda o, v: o.Training.gradientAccumulation(v)]))
def test_options_refuse_non_finite_numbers(bad, call):
    with pytest.raises((AssertionError, ValueError)):  # a float where an int goes: asserted
        call(poptorch.Options(), bad)


@FUZZ
@given(lr=NON_FINITE, kind=st.sampled_from(["SGD", "Adam", "AdamW", "RMSprop", "LAMB"]))
def test_optimizers_refuse_non_finite_learning_rates(lr, kind):
    model = torch.nn.Linear(2, 2)
    with pytest.raises(ValueError, match=r"(lr must be a finite number|Invalid learning rate|lr must be a non-negative number|"
                                         r"lr must be a positive number)"):
        getattr(poptorch.optim, kind)(model.parameters(), lr=lr)
    with pytest.raises(ValueError, match="(lr must be a finite number|Invalid learning rate)"):
        poptorch.trainingModel(model, optimizer=torch.optim.SGD(model.parameters(), lr=lr))


@FUZZ
@given(key=st.sampled_from(sorted(FIELDS)), text=st.one_of(
    st.text(max_size=20), st.sampled_from(["nan", "inf", "1e999", "[" * 50_000, "[1 2",
                                           "none", "-1", "[-1 -1]"])))
def test_ipuconfig_update_from_string_takes_random_text(key, text):
    try:
        IPUConfig().update_from_string(f"{key}={text}")
    except Exception as error:  # noqa: BLE001
        assert is_clear(error), f"{key}={text[:40]!r} raised {error!r}"
