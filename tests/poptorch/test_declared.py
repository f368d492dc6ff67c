"""_declared.py: one declaration per option, from which checks, dicts, setters and the spec follow."""
import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.poptorch import _to_simulator
from ipu_tutorials.poptorch._declared import (Option, _OptionGroup, declared, groups, plain,
                                              setters)
from ipu_tutorials.poptorch.option_groups import _TrainingOptions


def positive(where, value):
    if value <= 0:
        raise ValueError(f"{where} must be positive, got {value}")
    return value


class Toy(_OptionGroup):
    _prefix = "Toy."
    count = Option(2, setter="setCount", check=positive, spec="device_iterations")
    label = Option(None, setter="setLabel", key="theLabel", optional=True)

    def setCount(self, count):
        return self._set(count=count)


def test_a_declaration_is_read_on_the_class_and_its_value_on_the_group_by_its_key():
    toy = Toy()
    assert isinstance(Toy.count, Option) and Toy.count.name == "count" and Toy.count.key == "count"
    assert toy.count == 2
    with pytest.raises(AttributeError, match=r"^Toy.theLabel is not set; setLabel\(\) sets it$"):
        toy.theLabel  # an optional option is absent until set, as PopTorch's createOrSet ones
    assert toy._value("label") is None  # the simulator's view: the default
    assert declared(Toy) == (Toy.count, Toy.label)
    assert toy.toDict() == {"count": 2} and repr(toy) == "Toy(count=2)"


def test_the_setter_checks_through_the_declaration_and_a_refusal_changes_nothing():
    toy = Toy()
    with pytest.raises(ValueError, match=r"^Toy.setCount\(\) must be positive, got 0$"):
        toy.setCount(0)
    assert toy.setCount(5) is toy and toy.count == 5


def test_generic_set_checks_the_declared_type_and_keeps_pytorchs_names_in_dicts():
    toy = Toy()
    assert toy.set(theLabel="x") is None  # as PopTorch's OptionsDict.set, by PopTorch's names
    assert toy.toDict() == {"count": 2, "theLabel": "x"} and toy.theLabel == "x"
    with pytest.raises(AssertionError, match=r"Unexpected type <class 'str'> for option count"):
        toy.set(count="3")
    with pytest.raises(AssertionError, match=r"Invalid option cont, valid options are "
                                             r"\['count', 'theLabel'\]"):
        toy.set(cont=3)


def test_spec_fields_come_from_the_declarations():
    assert Toy().setCount(7)._spec_fields() == {"device_iterations": 7}
    opts = poptorch.Options().deviceIterations(3).replicationFactor(2)
    opts.Training.gradientAccumulation(10)
    opts.Training.accumulationAndReplicationReductionType(poptorch.ReductionType.Sum)
    opts.Precision.setPartialsType(torch.half)
    opts._Popart.set("autoRecomputation", 0)
    spec = _to_simulator.declared_spec(opts)
    assert (spec.device_iterations, spec.replication_factor, spec.gradient_accumulation) == (3, 2, 10)
    assert not spec.mean_reduction and spec.partials_bytes == 2 and spec.recompute == 0


def test_every_spec_field_a_declaration_names_is_a_field_of_the_run_spec():
    fields = set(_to_simulator.sim.RunSpec.__dataclass_fields__)
    opts = poptorch.Options()
    named = {o.spec for g in [opts, *(getattr(opts, g.name) for g in groups(type(opts)))]
             for o in declared(type(g)) if o.spec}
    assert named and named <= fields
    assert {"gradient_accumulation", "instances", "synthetic_data"} <= named


def test_setters_are_the_declared_ones_and_the_listed_extras():
    assert setters(_TrainingOptions) == {"gradientAccumulation", "accumulationAndReplicationReductionType",
                                         "setMeanAccumulationAndReplicationReductionStrategy",
                                         "setAutomaticLossScaling"}
    assert {"deviceIterations", "randomSeed", "setExecutionStrategy",
            "updatableNamedBuffers"} <= setters(poptorch.Options)
    assert "toDict" not in setters(poptorch.Options) and "clone" not in setters(poptorch.Options)


def test_plain_values_for_json():
    assert (plain({"a": torch.float16, "b": poptorch.OutputMode.All, "c": [1]}) ==
            {"a": "float16", "b": "All", "c": [1]})


class _WithLoss(torch.nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x, y):
        out = self.net(x)
        return out, torch.nn.functional.mse_loss(out, y)


def test_the_option_walk_from_setter_to_report():
    """docs/architecture.md's walk: gradientAccumulation(10) reaches the spec, the plan, the
    runtime's accumulation and the report through its declaration."""
    opts = poptorch.Options().showCompilationProgressBar(False)
    opts.Training.gradientAccumulation(10)
    net = torch.nn.Linear(3, 1)
    model = poptorch.trainingModel(_WithLoss(net), opts, poptorch.optim.SGD(net.parameters(), lr=0.1))
    model(torch.randn(20, 3), torch.randn(20, 1))  # 10 micro-batches of 2
    assert model.plan.spec.gradient_accumulation == 10 and model.plan.spec.micro_batch == 2
    summary = model.report().summary
    assert summary["batching"]["gradient_accumulation"] == 10
    assert summary["options"]["gradient_accumulation"] == 10


def test_options_saved_before_the_declarations_load_with_their_values():
    """PoplarExecutor.save's files from before: each group's values in `_values` by PopTorch's
    names, Options' groups in `_groups`, its strategy in `_strategy`."""
    training = object.__new__(_TrainingOptions)
    training.__setstate__({"_values": {"gradient_accumulation": 4}, "_frozen": True})
    assert training.gradient_accumulation == 4 and training._frozen
    assert training._value("auto_loss_scaling") is False  # not in the file: its default
    settings = object.__new__(poptorch.TensorLocationSettings)
    settings.__setstate__({"_values": {"onChip": 0}, "_frozen": False})
    assert settings.onChip == 0 and settings.toDict() == {"onChip": 0}
    popart = object.__new__(type(poptorch.Options()._Popart))
    popart.__setstate__({"_values": {"autoRecomputation": 3}, "_frozen": False})
    assert popart.options == {"autoRecomputation": 3}
    opts = object.__new__(poptorch.Options)
    opts.__setstate__({"_values": {"device_iterations": 3}, "_groups": {"Training": training},
                       "_strategy": poptorch.ShardedExecution(), "_frozen": True})
    assert opts.device_iterations == 3 and opts.Training is training and opts.max_repeat_logs == 4
    assert isinstance(opts._execution_strategy, poptorch.ShardedExecution)
    # files saved before `_values` held them: each value an attribute by declaration name
    older = object.__new__(_TrainingOptions)
    older.__setstate__({"gradient_accumulation": 6, "auto_loss_scaling": True, "_frozen": False})
    assert older.gradient_accumulation == 6 and older._value("auto_loss_scaling") is True
