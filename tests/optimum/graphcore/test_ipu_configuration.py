"""IPUConfig: v0.7.1's attributes and defaults, v0.5's era beside them, validators, POD types, options, JSON."""
import json
import logging

import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.optimum.graphcore import IPUConfig
from ipu_tutorials.optimum.graphcore.ipu_configuration import (ALLOWED_POD_TYPES,
                                                               IncompatibleIPUConfigError)
from ipu_tutorials.optimum.graphcore.modeling_utils import get_layer_ipu

# Every attribute the v0.2-v0.5 releases document, with v0.7.1's default (ipu_configuration.py).
V07_DEFAULTS = {
    "seed": None, "auto_loss_scaling": False, "executable_cache_dir": "",
    "replication_factor": 1, "inference_replication_factor": 1, "gradient_accumulation_steps": 1,
    "optimizer_state_offchip": False,
    "replicated_tensor_sharding": False, "matmul_proportion": 0.2, "enable_half_partials": True,
    "embedding_serialization_factor": 1, "recompute_checkpoint_every_layer": False,
    "device_iterations": 1, "inference_device_iterations": 1, "output_mode": "final",
}


@pytest.mark.parametrize("name,default", V07_DEFAULTS.items())
def test_every_attribute_has_the_v07_default(name, default):
    assert getattr(IPUConfig(), name) == default


def test_a_v05_era_configuration_takes_that_eras_defaults():
    with pytest.warns(UserWarning, match="sharded_execution_for_inference"):
        old = IPUConfig(layers_per_ipu=[2, 2], sharded_execution_for_inference=True)
    assert (old.matmul_proportion, old.optimizer_state_offchip) == (0.6, True)
    # was wrong: "as in v0.5" it followed layers_per_ipu; v0.1-v0.5 default it to 1
    assert (old.ipus_per_replica, old.inference_ipus_per_replica) == (1, 1)
    assert IPUConfig(layers_per_ipu=[2, 2]).ipus_per_replica == 2  # v0.6+: len(layers_per_ipu)
    per_pod = IPUConfig(replication_factor={"default": 1, "pod16": 4})
    assert per_pod.for_pod_type("pod16").matmul_proportion == 0.6
    assert IPUConfig(defaults_from="v0.5").optimizer_state_offchip is True
    assert IPUConfig(replication_factor={"default": 1}, defaults_from="v0.7").matmul_proportion == 0.2
    with pytest.raises(ValueError, match="defaults_from='v0.6' is not a release"):
        IPUConfig(defaults_from="v0.6")


def test_a_saved_v05_file_loads_with_that_eras_defaults(tmp_path):
    # was wrong: a file without ipus_per_replica loaded with None until for_pod_type
    (tmp_path / "ipu_config.json").write_text(json.dumps(
        {"layers_per_ipu": [1, 3], "replication_factor": {"default": 1, "pod16": 2},
         "matmul_proportion": [0.3, 0.4]}))
    loaded = IPUConfig.from_pretrained(tmp_path)
    assert loaded.ipus_per_replica == 1  # v0.5: kwargs.pop("ipus_per_replica", 1)
    config = loaded.for_pod_type("pod16")
    assert (config.ipus_per_replica, config.replication_factor) == (1, 2)
    # v0.5 set a proportion for each of ipus_per_replica IPUs, and placed the layers by
    # layers_per_ipu alone (get_layer_ipu), without comparing the two
    assert config.to_options().available_memory_proportion == {0: 0.3}  # PopTorch keys by IPU
    assert get_layer_ipu(config, 4) == [0, 1, 1, 1]
    with pytest.raises(IncompatibleIPUConfigError, match=r"layers_per_ipu does not define enough "
                                                         r"layers .* assignments for 4 layers but "
                                                         r"there are 5 layers"):
        get_layer_ipu(config, 5)
    assert IPUConfig.from_pretrained(tmp_path, ipus_per_replica=2).for_pod_type(
        "pod16").ipus_per_replica == 2


def test_layers_per_ipu_defaults_to_the_wildcard_and_derived_attributes_follow_it():
    config = IPUConfig()
    assert config.layers_per_ipu == [-1] and config.ipus_per_replica == 1
    config = IPUConfig(layers_per_ipu=[2, 3, 4, 2])
    assert config.ipus_per_replica == 4
    assert config.inference_layers_per_ipu == [2, 3, 4, 2]
    assert config.inference_ipus_per_replica == 4
    assert config.inference_matmul_proportion == 0.2


def test_inference_ipus_follow_ipus_per_replica_when_layers_are_the_wildcard():
    config = IPUConfig(layers_per_ipu=[-1], ipus_per_replica=4)
    assert config.inference_ipus_per_replica == 4


def test_inference_matmul_proportion_falls_back_to_0_2_when_the_list_cannot_fit():
    config = IPUConfig(layers_per_ipu=[2, 2], matmul_proportion=[0.1, 0.3],
                       inference_layers_per_ipu=[4])
    assert config.inference_matmul_proportion == 0.2  # v0.6+; v0.5's era: 0.6
    assert IPUConfig(layers_per_ipu=[2, 2], matmul_proportion=[0.1, 0.3], inference_layers_per_ipu=[4],
                     defaults_from="v0.5").inference_matmul_proportion == 0.6


@pytest.mark.parametrize("name,value", [
    ("device_iterations", 2.0), ("replication_factor", "4"), ("auto_loss_scaling", 1),
    ("layers_per_ipu", [1, 2.5]), ("matmul_proportion", "0.2"), ("output_mode", None),
    ("seed", 1.5), ("executable_cache_dir", 3), ("parallelize_kwargs", [1]),
])
def test_wrong_types_are_rejected_on_construction_and_on_assignment(name, value):
    with pytest.raises(TypeError, match=f"attribute: {name}, type: .* is invalid"):
        IPUConfig(**{name: value})
    config = IPUConfig()
    with pytest.raises(TypeError, match=f"attribute: {name}"):
        setattr(config, name, value)


@pytest.mark.parametrize("name,value,message", [
    ("replication_factor", 0, "`replication_factor` must be >= 1"),
    ("inference_replication_factor", 0, "`inference_replication_factor` must be >= 1"),
    ("gradient_accumulation_steps", 0, "`gradient_accumulation_steps` must be >= 1"),
    ("device_iterations", -2, "`device_iterations` must be >= 1"),
    ("inference_device_iterations", 0, "`inference_device_iterations` must be >= 1"),
    ("ipus_per_replica", 0, "`ipus_per_replica` must be >= 1"),
    ("embedding_serialization_factor", 0, "`embedding_serialization_factor` must be >= 1"),
    ("projection_serialization_factor", 0, "`projection_serialization_factor` must be >= 1"),
    ("layers_per_ipu", [2, -2], "`layers_per_ipu` must have all elements >= -1"),
    ("matmul_proportion", -0.1, "`matmul_proportion` must be >= 0"),
    ("matmul_proportion", [0.2, -0.1], "`matmul_proportion` must have all elements >= 0"),
    ("output_mode", "every", "`output_mode` can only take values in all, sum, final, default"),
    ("serialized_embedding_splits_per_ipu", [0, -1], "must have all elements >= 0"),
    ("serialized_embedding_splits_per_ipu", [0, 0], "must have atleast 1 split"),
    ("serialized_projection_splits_per_ipu", [0, 3, 0, 2], "splits on consecutive IPUs"),
])
def test_value_validators_run_on_construction_and_on_every_assignment(name, value, message):
    with pytest.raises(ValueError, match=message):
        IPUConfig(**{name: value})
    config = IPUConfig()
    with pytest.raises(ValueError, match=message):
        setattr(config, name, value)


def test_unknown_arguments_and_attributes_are_refused_with_the_valid_names():
    with pytest.raises(IncompatibleIPUConfigError, match="unknown arguments:\n  layer_per_ipu=\\[2\\]"):
        IPUConfig(layer_per_ipu=[2])
    with pytest.raises(AttributeError, match="no attribute 'layer_per_ipu'; valid attributes"):
        IPUConfig().layer_per_ipu = [2]


def test_metadata_keys_from_optimum_files_are_tolerated():
    assert IPUConfig(optimum_version="1.6.1", transformers_version="4.29.2") == IPUConfig()


@pytest.mark.parametrize("kwargs,error,message", [
    ({"layers_per_ipu": [1, 1], "matmul_proportion": [0.2, 0.2, 0.2]}, IncompatibleIPUConfigError,
     r"matmul_proportion=\[0.2, 0.2, 0.2\] should use the same number of IPUs as ipus_per_replica=2"),
    ({"layers_per_ipu": [1, 1], "ipus_per_replica": 4}, IncompatibleIPUConfigError,
     r"layers_per_ipu=\[1, 1\] should use the same number of IPUs as ipus_per_replica=4"),
    ({"layers_per_ipu": [2], "inference_layers_per_ipu": [1, 1], "inference_ipus_per_replica": 3},
     IncompatibleIPUConfigError, "inference_layers_per_ipu=.* inference_ipus_per_replica=3"),
    ({"embedding_serialization_factor": 2, "serialized_embedding_splits_per_ipu": [1]}, ValueError,
     "Only one of `embedding_serialization_factor` and `serialized_embedding_splits_per_ipu`"),
    ({"layers_per_ipu": [1, 1], "serialized_projection_splits_per_ipu": [1]}, ValueError,
     r"serialized_projection_splits_per_ipu=\[1\] should use the same number of IPUs"),
])
def test_whole_config_validation(kwargs, error, message):
    with pytest.raises(error, match=message):
        IPUConfig(**kwargs)


def test_whole_config_validation_runs_again_in_to_options():
    config = IPUConfig(layers_per_ipu=[1, 1])
    config.matmul_proportion = [0.1, 0.2, 0.3]  # fine alone; contradicts ipus_per_replica
    with pytest.raises(IncompatibleIPUConfigError, match="ipus_per_replica=2"):
        config.to_options()


def test_replicated_tensor_sharding_without_replicas_warns(caplog):
    with caplog.at_level(logging.WARNING):
        IPUConfig(replicated_tensor_sharding=True)
    assert "not used when `replication_factor=1`" in caplog.text


def test_modes_switch_the_managed_attributes():
    config = IPUConfig(layers_per_ipu=[2, 2], inference_layers_per_ipu=[4], matmul_proportion=0.3,
                       inference_matmul_proportion=0.1)
    assert config.mode == "training" and config._layers_per_ipu == [2, 2]
    assert config.eval() is config and config._layers_per_ipu == [4]
    assert config._ipus_per_replica == 1 and config._matmul_proportion == 0.1
    config._layers_per_ipu = [3]  # writes the inference variant
    assert config.inference_layers_per_ipu == [3] and config.train()._layers_per_ipu == [2, 2]
    with pytest.raises(ValueError, match="mode can only take values in \\('training', 'inference'\\)"):
        config.mode = "testing"


# --- to_options, option by option (optimum-graphcore v0.7.1's ipu_configuration.py) ---------------
def test_training_options_follow_the_reference():
    config = IPUConfig(layers_per_ipu=[3, 7, 7, 7], replication_factor=4,
                       gradient_accumulation_steps=2048, device_iterations=2, seed=42,
                       matmul_proportion=[0.1, 0.15, 0.15, 0.15], executable_cache_dir="./exe",
                       auto_loss_scaling=True, output_mode="all")
    opts = config.to_options()
    assert opts.auto_round_num_ipus is True
    assert opts.replication_factor == 4 and opts.device_iterations == 2
    assert opts.Training.gradient_accumulation == 2048
    assert opts.Training.accumulation_and_replication_reduction_type == poptorch.ReductionType.Mean
    assert opts.Training._value("auto_loss_scaling") is True  # PopTorch sends it to PopART
    assert opts.output_mode == poptorch.OutputMode.All
    assert opts.random_seed == 42
    assert opts.TensorLocations.location_optimizer == {"onChip": 1, "useReplicatedTensorSharding": 0}  # v0.7: on chip
    assert repr(opts._execution_strategy) == "PipelinedExecution(AutoStage.AutoIncrement)"
    assert opts.connection_type == poptorch.ConnectionType.Always
    assert opts.available_memory_proportion == {0: 0.1, 1: 0.15, 2: 0.15, 3: 0.15}
    assert opts._value("executable_cache_dir") == "./exe"
    assert opts.Precision._value("enable_stochastic_rounding") is True
    assert opts.Precision._value("partials_type") == torch.float16
    popart = opts._Popart.toDict()
    assert popart["disableGradAccumulationTensorStreams"] is True
    assert popart["accumulateOuterFragmentSettings.schedule"] == 3
    assert popart["outlineThreshold"] == 10.0 and popart["subgraphCopyingStrategy"] == 1
    assert popart["engineOptions"] == {"opt.useAutoloader": "true",
                                       "target.syncReplicasIndependently": "true"}
    assert "enableExplicitIR" not in popart


def test_inference_options_follow_the_reference():
    config = IPUConfig(layers_per_ipu=[6, 6], inference_layers_per_ipu=[12], replication_factor=2,
                       inference_replication_factor=8, gradient_accumulation_steps=16,
                       device_iterations=4, inference_device_iterations=32, output_mode="final",
                       matmul_proportion=[0.2, 0.3], inference_matmul_proportion=0.25,
                       replicated_tensor_sharding=True, optimizer_state_offchip=False,
                       enable_half_partials=False, explicit_ir_inference=True)
    opts = config.to_options(for_inference=True)
    assert opts.replication_factor == 8 and opts.device_iterations == 32
    assert opts.Training.gradient_accumulation == 1
    assert opts.output_mode == poptorch.OutputMode.All
    assert repr(opts._execution_strategy) == "ShardedExecution(AutoStage.AutoIncrement)"
    assert opts.available_memory_proportion == {0: 0.25}
    assert opts.Precision._value("enable_stochastic_rounding") is False
    assert opts.Precision._value("partials_type") == torch.float32
    assert opts.TensorLocations.location_optimizer == {"onChip": 1, "useReplicatedTensorSharding": 1}
    assert opts._Popart.toDict()["enableExplicitIR"] is True
    assert config.mode == "training"  # to_options restores the mode


def test_options_defaults_and_special_values():
    opts = IPUConfig(seed=0, executable_cache_dir="disabled").to_options()
    assert not hasattr(opts, "random_seed")  # seed 0 is falsy: optimum-graphcore does not set it
    assert opts._value("executable_cache_dir") is None
    assert opts.output_mode == poptorch.OutputMode.Final
    assert opts.available_memory_proportion == {0: 0.2}  # v0.7.1 default
    assert IPUConfig(output_mode="default").to_options().output_mode == poptorch.OutputMode.Default


def test_compile_only_targets_an_offline_ipu_and_nothing_demands_hardware():
    assert poptorch.ipuHardwareVersion() == -1  # no hardware, and to_options does not mind
    opts = IPUConfig().to_options(compile_only=True)
    assert opts.connection_type == poptorch.ConnectionType.Never and opts.ipu_version == 2


def test_execute_encoder_on_cpu_is_not_implemented():
    with pytest.raises(NotImplementedError, match="execute_encoder_on_cpu_for_generation"):
        IPUConfig(execute_encoder_on_cpu_for_generation=True).to_options()


# --- POD types and batch size factor -------------------------------------------------------------
POD_CONFIG = {"layers_per_ipu": [3, 7, 7, 7],
              "replication_factor": {"default": 1, "pod16": 4, "pod64": 16},
              "gradient_accumulation_steps": {"default": 512, "pod16": 512, "pod64": 128},
              "device_iterations": 1}


def test_for_pod_type_picks_each_value():
    config = IPUConfig(**POD_CONFIG)
    assert config._has_pod_types and config.ipus_per_replica == 1  # v0.5's default, never None
    pod64 = config.for_pod_type("pod64")
    assert not pod64._has_pod_types and pod64.ipus_per_replica == 1
    assert (pod64.replication_factor, pod64.gradient_accumulation_steps) == (16, 128)
    assert config.for_pod_type().replication_factor == 1
    assert config.to_options(pod_type="pod16").replication_factor == 4


def test_batch_size_factor_per_pod_type_and_mode():
    config = IPUConfig(**POD_CONFIG, inference_replication_factor={"default": 2, "pod16": 4, "pod64": 16},
                       inference_device_iterations=8)
    assert config.batch_size_factor() == 512
    assert config.batch_size_factor(pod_type="pod16") == 4 * 512
    assert config.batch_size_factor(pod_type="pod64") == 16 * 128
    assert config.batch_size_factor(for_inference=True) == 2 * 8
    assert config.batch_size_factor(for_inference=True, pod_type="pod16") == 4 * 8
    assert IPUConfig(replication_factor=2, gradient_accumulation_steps=3,
                     device_iterations=5).batch_size_factor() == 30


def test_pod_type_errors():
    config = IPUConfig(replication_factor={"pod16": 4})
    with pytest.raises(RuntimeError, match="no default value was provided for replication_factor"):
        config.for_pod_type()
    with pytest.raises(ValueError, match="pod12 is not a correct value for a POD type, supported "
                                         "POD types: pod4, pod8, pod16, pod32, pod64"):
        config.for_pod_type("pod12")
    with pytest.raises(KeyError, match="does not contain a value for POD type pod64"):
        config.to_options(pod_type="pod64")
    with pytest.raises(ValueError, match="`replication_factor` must be >= 1"):
        IPUConfig(replication_factor={"default": 1, "pod16": 0})
    assert ALLOWED_POD_TYPES == ("pod4", "pod8", "pod16", "pod32", "pod64")


# --- strings, dicts and files ---------------------------------------------------------------------
def test_update_from_string_reads_each_type():
    config = IPUConfig(layers_per_ipu=[1, 1, 1, 1])
    config.update_from_string("gradient_accumulation_steps=64,auto_loss_scaling=true,"
                              "matmul_proportion=[0.08 0.2 0.25 0.25], output_mode=all,seed=7,"
                              "optimizer_state_offchip=no")
    assert config.gradient_accumulation_steps == 64 and config.auto_loss_scaling is True
    assert config.matmul_proportion == [0.08, 0.2, 0.25, 0.25] and config.output_mode == "all"
    assert config.seed == 7 and config.optimizer_state_offchip is False


@pytest.mark.parametrize("text,error,message", [
    ("n_embd=10", ValueError, "Key n_embd isn't in the original config dict"),
    ("auto_loss_scaling=maybe", ValueError, "Can't derive true or false from maybe"),
    ("device_iterations=2.5", TypeError, "attribute: device_iterations"),
    ("layers_per_ipu=[1 x]", ValueError, "write lists as \\[a b c\\]"),
])
def test_update_from_string_errors(text, error, message):
    with pytest.raises(error, match=message):
        IPUConfig().update_from_string(text)


def test_json_round_trip_through_a_directory_and_a_file(tmp_path):
    config = IPUConfig(layers_per_ipu=[3, 7, 7, 7], replication_factor=4, matmul_proportion=0.15,
                       gradient_accumulation_steps=2048, recompute_checkpoint_every_layer=True)
    config.save_pretrained(tmp_path / "bert")
    saved = json.loads((tmp_path / "bert" / "ipu_config.json").read_text())
    assert saved["layers_per_ipu"] == [3, 7, 7, 7] and "seed" not in saved  # diff against defaults
    assert IPUConfig.from_pretrained(tmp_path / "bert") == config
    assert IPUConfig.from_pretrained(tmp_path / "bert" / "ipu_config.json") == config
    assert IPUConfig.from_pretrained(tmp_path / "bert", seed=3).seed == 3
    assert json.loads(config.to_json_string(use_diff=False)) == config.to_dict()
    assert IPUConfig.from_dict(config.to_dict()) == config


def test_pod_type_values_survive_the_round_trip(tmp_path):
    config = IPUConfig(**POD_CONFIG)
    config.save_pretrained(tmp_path)
    assert IPUConfig.from_pretrained(tmp_path).for_pod_type("pod64").replication_factor == 16


def test_hub_names_get_a_clear_offline_error(tmp_path):
    with pytest.raises(OSError, match="'Graphcore/bert-large-ipu' is not a local directory or file.*"
                                      "does not download from the Hugging Face Hub"):
        IPUConfig.from_pretrained("Graphcore/bert-large-ipu")
    with pytest.raises(OSError, match="has no ipu_config.json"):
        IPUConfig.from_pretrained(tmp_path)
    (tmp_path / "file").write_text("{}")
    with pytest.raises(AssertionError, match="should be a directory, not a file"):
        IPUConfig().save_pretrained(tmp_path / "file")
