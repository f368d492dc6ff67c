"""Each facade is the real surface and no more: checked against the manifests of tests/peer/.

A name, parameter, return or attribute type a facade has and the real project lacks fails here
unless ipu_tutorials/support/extras_registry.py declares it; each rule the manifests list
raises the real exception class; every extra notes its use (support/extras.py); and
docs/differences.md lists every extra (`ipu-course pages` writes its table).
"""
import builtins
import json
import pathlib
import sys
import warnings

import pytest
import torch
from torch import nn

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import manifest  # noqa: E402
import surface_facades  # noqa: E402

from ipu_tutorials import poptorch  # noqa: E402
from ipu_tutorials.course import pages  # noqa: E402
from ipu_tutorials.course.checkout import Checkout  # noqa: E402
from ipu_tutorials.support import extras, extras_registry  # noqa: E402

CHECKOUT = Checkout(str(HERE.parent.parent))


@pytest.fixture(scope="module")
def findings():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return surface_facades.all_findings(declared=False)


def test_no_facade_has_an_undeclared_extra(findings):
    undeclared = [str(f) for f in findings if not extras_registry.declares(f.kind, f.name)]
    assert not undeclared, ("declare each in ipu_tutorials/support/extras_registry.py (with a "
                            "row in docs/differences.md), or make the facade match:\n"
                            + "\n".join(undeclared))


def test_every_declared_extra_is_still_one(findings):
    found = {(f.kind, f.name) for f in findings}
    stale = [e.name for e in extras_registry.EXTRAS
             if e.kind != "keyword" and (e.kind, e.name) not in found]
    assert not stale, f"declared but the facade matches the real surface now: {stale}"


def test_differences_lists_every_extra():
    table = next(b for b in pages.BLOCKS if b.page == "docs/differences.md")
    assert table.written(CHECKOUT) == pages.extras_table(), (
        "docs/differences.md's extras table is out of date: run `ipu-course pages`")


# --- what a call returns, what an attribute holds -------------------------------------------
def test_phase_ipus_returns_none_as_poptorch_does():
    # was wrong: it returned the phase, so lesson 6 chained Phase(...).ipus(...)
    phase = poptorch.Phase(poptorch.Stage("A"), poptorch.Stage("B"))
    assert phase.ipus(0, 1) is None
    assert [stage._ipu for stage in phase.stages] == [0, 1]


def test_output_mode_is_held_as_poptorchs_int():
    # was wrong: an OutputMode, so lesson 13's `opts.output_mode.name` worked here only
    opts = poptorch.Options().outputMode(poptorch.OutputMode.Sum)
    assert type(opts.output_mode) is int and opts.output_mode == 3
    assert not hasattr(opts.output_mode, "name")


def test_options_hold_poptorchs_forms_of_their_values():
    # python/options.py at sdk/poptorch/3.4.0: setAvailableMemoryProportion stores
    # {int(key[3:]): value}; anchorTensor a list; connectionType and syncPattern the ints
    opts = poptorch.Options().setAvailableMemoryProportion({"IPU0": 0.5, "IPU3": 0.25})
    opts.connectionType(poptorch.ConnectionType.OnDemand)
    opts.anchorTensor("g", "Gradient___w", poptorch.OutputMode.Sum)
    assert opts.available_memory_proportion == {0: 0.5, 3: 0.25}
    assert opts.connection_type == 1 and type(opts.connection_type) is int
    assert opts.anchored_tensors == {"g": ["Gradient___w", False, poptorch.OutputMode.Sum, 1]}


# --- each rule raises the real exception class -------------------------------------------
def two_blocks(ipus=(0, 1)) -> nn.Module:
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))
    poptorch.BeginBlock(model[0], "A", ipu_id=ipus[0])
    poptorch.BeginBlock(model[1], "B", ipu_id=ipus[1])
    return model


def compile_with(model, strategy=None):
    opts = poptorch.Options()
    if strategy is not None:
        opts.setExecutionStrategy(strategy)
    poptorch.inferenceModel(model, opts).compile(torch.zeros(2, 4))


def frozen_options():
    opts = poptorch.Options()
    poptorch.inferenceModel(nn.Linear(2, 2), opts)
    opts.deviceIterations(2)


def offline_model():
    model = poptorch.inferenceModel(nn.Linear(2, 2), poptorch.Options().useOfflineIpuTarget())
    model.compile(torch.zeros(1, 2))
    return model


def accumulating_inference():
    opts = poptorch.Options()
    opts.Training.gradientAccumulation(2)
    poptorch.inferenceModel(nn.Linear(2, 2), opts)


def two_training_wrappers():
    model = nn.Sequential(nn.Linear(2, 2))
    first = poptorch.trainingModel(model)  # noqa: F841 - alive while the second is made
    poptorch.trainingModel(model)


def ipu_strategy():
    from ipu_tutorials.lightning import IPUPrecisionPlugin
    return IPUPrecisionPlugin


def ipu_config(**kwargs):
    from ipu_tutorials.optimum.graphcore import IPUConfig
    return IPUConfig(**kwargs)


Stage, Phase = poptorch.Stage, poptorch.Phase
TRIGGERS = {
    "same-as-ipu-needs-an-ipu": lambda: compile_with(two_blocks((None, 1))),
    "pipelined-unknown-block": lambda: compile_with(two_blocks(),
                                                    poptorch.PipelinedExecution("A")),
    "phased-unknown-block": lambda: compile_with(
        two_blocks(), poptorch.SerialPhasedExecution(Phase(Stage("A").ipu(0)))),
    "block-in-two-stages": lambda: poptorch.PipelinedExecution("A", Stage("A", "B")),
    "stage-of-unknown-block": lambda: poptorch.PipelinedExecution("A").stage("B"),
    "stage-block-ids-are-strings": lambda: Stage(1),
    "stage-ipu-is-an-int": lambda: Stage("A").ipu("0"),
    "phase-takes-stages-or-block-ids": lambda: Phase("A", Stage("B")),
    "phase-ipus-one-per-stage": lambda: Phase(Stage("A"), Stage("B")).ipus(0),
    "phased-needs-phases": lambda: poptorch.SerialPhasedExecution(),
    "phase-index-is-positive": lambda: poptorch.SerialPhasedExecution("A").phase(-1),
    "liveness-is-a-liveness": lambda: poptorch.SerialPhasedExecution("A").setTensorsLiveness(1),
    "option-value-has-its-type": lambda: poptorch.Options().deviceIterations("4"),
    "option-name-exists": lambda: poptorch.Options().set(device_iteration=4),
    "frozen-options-refuse-changes": frozen_options,
    "output-mode-is-an-output-mode": lambda: poptorch.Options().outputMode("All"),
    "every-n-needs-a-period": lambda: poptorch.Options().outputMode(poptorch.OutputMode.EveryN),
    "strategy-is-a-strategy": lambda: poptorch.Options().setExecutionStrategy("pipelined"),
    "memory-proportion-keys-name-ipus":
        lambda: poptorch.Options().setAvailableMemoryProportion({"0": 0.5}),
    "input-groups-not-all": lambda: poptorch.Options().replicationFactor(2).inputReplicaGrouping(
        2, poptorch.CommGroupType.All),
    "connection-type-is-a-connection-type": lambda: poptorch.Options().connectionType(0),
    "random-seed-is-an-int": lambda: poptorch.Options().randomSeed(1.5),
    "io-tiles-in-range": lambda: poptorch.Options().TensorLocations.numIOTiles(8),
    "location-is-tensor-location-settings":
        lambda: poptorch.Options().TensorLocations.setActivationLocation({"onChip": 0}),
    "on-chip-flag-is-a-bool": lambda: poptorch.TensorLocationSettings().useOnChipStorage(0),
    "partials-type-float-or-half": lambda: poptorch.Options().Precision.setPartialsType(
        torch.int32),
    "begin-block-takes-a-module": lambda: poptorch.BeginBlock(3, "A"),
    "begin-block-once-per-module": lambda: poptorch.BeginBlock(
        poptorch.BeginBlock(nn.Linear(2, 2), "A"), "B"),
    "remove-blocks-takes-a-module": lambda: poptorch.removeBlocks("model"),
    "offline-model-cannot-run": lambda: offline_model()(torch.zeros(1, 2)),
    "offline-model-cannot-attach": lambda: offline_model().attachToDevice(),
    "tensor-names-after-compile": lambda: poptorch.inferenceModel(nn.Linear(2, 2))
    .getTensorNames(),
    "anchored-tensor-exists": lambda: offline_model().getAnchoredTensor("grad"),
    "wrapper-takes-options": lambda: poptorch.inferenceModel(nn.Linear(2, 2), {"replicas": 2}),
    "inference-without-accumulation": lambda: accumulating_inference(),
    "model-wrapped-once-for-training": two_training_wrappers,
    "multiconv-plan-type": lambda: poptorch.MultiConv().planType("parallel"),
    "identity-loss-reduction": lambda: poptorch.identity_loss(torch.ones(2), reduction="max"),
    "inputs-not-too-many": lambda: poptorch.inferenceModel(nn.Linear(2, 2))(
        torch.zeros(1, 2), torch.zeros(1, 2)),
    "inputs-known-names": lambda: poptorch.inferenceModel(nn.Linear(2, 2))(x=torch.zeros(1, 2)),
    "inputs-mandatory-given": lambda: poptorch.inferenceModel(nn.Linear(2, 2))(),
    "ipu-config-unknown-argument": lambda: ipu_config(replicas=2),
    "ipu-config-update-unknown-key": lambda: ipu_config().update_from_string("replicas=2"),
    "ipu-precision-supported": lambda: ipu_strategy()("bf16-mixed"),
    "ipu-no-gradient-clipping": lambda: ipu_strategy()("32-true").clip_gradients(None, 1.0),
    "ipu-no-lbfgs": lambda: ipu_strategy()("32-true").optimizer_step(
        torch.optim.LBFGS([nn.Parameter(torch.zeros(1))]), None, lambda: 1.0),
}


def expected_class(project: str, name: str) -> type:
    if name == "poptorch.Error":
        return poptorch.Error
    if name == "IncompatibleIPUConfigError":
        from ipu_tutorials.optimum.graphcore.ipu_configuration import IncompatibleIPUConfigError
        return IncompatibleIPUConfigError
    if name == "MisconfigurationException":
        from lightning.pytorch.utilities.exceptions import MisconfigurationException
        return MisconfigurationException
    return getattr(builtins, name)


def rules() -> list[tuple[str, str, dict]]:
    found = []
    for path in sorted(manifest.MANIFESTS.glob("*.json")):
        data = json.loads(path.read_text())
        found += [(data["project"], rule_id, rule) for rule_id, rule in data["rules"].items()]
    return found


def test_every_rule_has_a_trigger():
    assert {rule_id for _, rule_id, _ in rules()} == set(TRIGGERS)


@pytest.mark.parametrize("project, rule_id, rule", rules(), ids=[r for _, r, _ in rules()])
def test_a_rule_raises_the_real_exception_class(project, rule_id, rule):
    wanted = expected_class(project, rule["exception"])
    with pytest.raises(Exception) as raised:
        TRIGGERS[rule_id]()
    assert isinstance(raised.value, wanted), (
        f"{rule_id}: the real one raises {rule['exception']} ({rule['at']}), the facade "
        f"{type(raised.value).__name__}: {raised.value}")
    # no class that is both: code written for one must not catch the other only here
    if wanted is AssertionError:
        assert not isinstance(raised.value, poptorch.Error)
    if wanted is poptorch.Error:
        assert not isinstance(raised.value, AssertionError)
    assert str(raised.value), "a rule's error says what is wrong"


# --- every extra notes its use, and only the learner's ------------------------------------
def compiled() -> poptorch.PoplarExecutor:
    model = poptorch.inferenceModel(nn.Linear(2, 2))
    model.compile(torch.zeros(1, 2))
    return model


def strategy_stats():
    from ipu_tutorials.lightning import IPUStrategy
    strategy = IPUStrategy()
    return strategy.stats, strategy.report_paths


USES = {  # extra -> code that uses it, from this file
    "poptorch.PoplarExecutor.plan": lambda: compiled().plan,
    "poptorch.PoplarExecutor.report": lambda: compiled().report(),
    "poptorch.PoplarExecutor.simulated_seconds": lambda: compiled().simulated_seconds,
    "poptorch.PoplarExecutor.host_seconds": lambda: compiled().host_seconds,
    "poptorch.OutOfMemoryError": lambda: poptorch.OutOfMemoryError,
    "poptorch.register_custom_op": lambda: poptorch.register_custom_op,
    "poptorch.optim.Optimizer.apply_gradients": lambda: poptorch.optim.SGD(
        [nn.Parameter(torch.zeros(1))], lr=0.1).apply_gradients({}, 1.0),
    "optimum.graphcore.IPUConfig(defaults_from=)": lambda: ipu_config(defaults_from="v0.5"),
    "lightning.pytorch.strategies.ipu.IPUStrategy.stats": lambda: strategy_stats(),
    "lightning.pytorch.strategies.ipu.IPUStrategy.report_paths": lambda: strategy_stats(),
    "lightning.pytorch.strategies.ipu.RealIPUWarning":
        lambda: __import__("ipu_tutorials.lightning", fromlist=["x"]).RealIPUWarning,
}


def test_every_served_extra_has_a_use_here():
    served = {e.name for e in extras_registry.EXTRAS if e.kind != "signature"}
    assert served == set(USES)


@pytest.mark.parametrize("name", sorted(USES))
def test_an_extra_notes_the_line_that_used_it(name):
    with extras.recording_extras() as uses:
        USES[name]()
    assert name in {u.extra for u in uses}
    use = next(u for u in uses if u.extra == name)
    assert use.file == __file__ and "USES" not in use.code  # this file's lambda, its own line


def test_nothing_is_noted_when_not_recording_or_inside_the_package():
    model = compiled()
    model.plan  # noqa: B018 - a use with no recording running
    with extras.recording_extras() as uses:
        model.report()  # the report reads model.plan inside the package: one use, report's
    assert [u.extra for u in uses] == ["poptorch.PoplarExecutor.report"]


def test_a_use_marked_on_its_statement_passes_and_an_unmarked_one_is_named():
    cell = ("plan = model.plan  # simulator extra\n"
            "x = f(1,\n"
            "      model.plan)  # simulator extra\n"
            "print(model.report())\n")
    assert extras.unmarked_lines(cell, [1, 2, 3, 4]) == [(4, "print(model.report())")]


def test_a_log_file_names_each_use(tmp_path, monkeypatch):
    log = tmp_path / "extras.jsonl"
    monkeypatch.setenv(extras.LOG_VARIABLE, str(log))
    with extras.recording_extras():
        USES["poptorch.OutOfMemoryError"]()
    assert [u.extra for u in extras.read_log(log)] == ["poptorch.OutOfMemoryError"]
