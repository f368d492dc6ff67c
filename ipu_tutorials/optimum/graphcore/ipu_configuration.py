"""IPUConfig: optimum-graphcore's JSON-serialisable IPU configuration, turned into poptorch.Options."""
from __future__ import annotations

import copy
import json
import logging
import os
import warnings
from typing import Any

import torch

from ... import poptorch
from ...support import extras as _extras
from ...support.atomic_io import write_text as _write_text
from . import _config_fields as _fields
from ._config_fields import ALLOWED_POD_TYPES, IncompatibleIPUConfigError
from ._config_fields import IPUConfigFields as _IPUConfigFields
from ._popart_flags import set_popart_flags as _set_popart_flags
from ._popart_flags import simulated_ipu_version as _simulated_ipu_version

# the module's names are optimum-graphcore's (ALLOWED_POD_TYPES until v0.6.0); the rest are private
IPU_CONFIG_NAME = "ipu_config.json"
_MODES = ("training", "inference")
_OUTPUT_MODES = {"all": poptorch.OutputMode.All, "sum": poptorch.OutputMode.Sum,
                "final": poptorch.OutputMode.Final, "default": poptorch.OutputMode.Default}
_logger = logging.getLogger(__name__)


def _note_defaults_from(kwargs: dict) -> None:
    """`defaults_from=` is the simulator's (support/extras_registry.py): note its use by the
    caller of the IPUConfig method that received it."""
    if "defaults_from" in kwargs:
        _extras.record("optimum.graphcore.IPUConfig(defaults_from=)", depth=2)


class IPUConfig(_IPUConfigFields):
    """How a Hugging Face model is placed, batched and run on IPUs, as a JSON file beside it.

    optimum-graphcore v0.7.1's IPUConfig: every attribute is a keyword argument, declared with
    its type hint and v0.7.1's default in `_config_fields.IPUConfigFields` (a dataclass this
    class extends), with `train()`/`eval()` modes and their `inference_*` attributes, and the
    -1 wildcard in `layers_per_ipu`.

    The v0.2-v0.5 API works beside it: any attribute may be given per POD type, as a dict keyed
    by "default", "pod4" ... "pod64", and `for_pod_type` picks the values. Such a configuration
    (or one with v0.5's `sharded_execution_for_inference`) takes the v0.5 defaults for what it
    leaves out (matmul_proportion 0.6, optimizer_state_offchip True, ipus_per_replica 1) and
    that era's rules (`release`); `defaults_from="v0.5"` or
    `"v0.7"` picks the release explicitly (docs/ipuconfig.md).

    Every assignment is type-checked and validated; the whole configuration is validated on
    construction and again by `to_options`.

    Raises:
        IncompatibleIPUConfigError: for unknown arguments or values that contradict each other.
        TypeError: for a value of the wrong type. ValueError: for a value out of range.
    """

    CONFIG_NAME = IPU_CONFIG_NAME
    modes = _MODES

    def __init__(self, **kwargs: Any):
        _note_defaults_from(kwargs)
        object.__setattr__(self, "_mode", "training")
        object.__setattr__(self, "_release", _fields.release_of(kwargs))
        for deprecated in ("enable_half_first_order_momentum", "sharded_execution_for_inference"):
            if deprecated in kwargs:
                warnings.warn(f"The {deprecated!r} parameter is deprecated", stacklevel=2)
            kwargs.pop(deprecated, None)  # inference is always sharded (v0.3+)
        for key in _fields.METADATA_KEYS & kwargs.keys():
            kwargs.pop(key)
        unknown = {k: v for k, v in kwargs.items() if k not in _fields.FIELDS}
        if unknown:
            listed = "\n".join(f"  {k}={v!r}" for k, v in unknown.items())
            raise IncompatibleIPUConfigError(
                f"IPUConfig received unknown arguments:\n{listed}\nValid arguments are: "
                f"{', '.join(_fields.FIELDS)}")
        for name in _fields.FIELDS:
            setattr(self, name, copy.deepcopy(kwargs.get(name, _fields.default_of(name, self._release))))
        if not self._has_pod_types:
            self._derive_defaults()
            self._validate_ipu_config()

    # --- attributes -----------------------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        if name in _fields.FIELDS:
            _fields.validate(name, value)
        elif not name.startswith("_") and not hasattr(type(self), name):
            raise AttributeError(f"IPUConfig has no attribute {name!r}; valid attributes are: "
                                 f"{', '.join(_fields.FIELDS)}")
        object.__setattr__(self, name, value)

    @property
    def _has_pod_types(self) -> bool:
        """True while some value is still given per POD type (see `for_pod_type`)."""
        return any(_fields.is_pod_dict(getattr(self, n)) for n in _fields.FIELDS
                   if not _fields.takes_dict(n))

    def _derive_defaults(self) -> None:
        """Fill the attributes left None from the ones they follow (optimum-graphcore v0.7)."""
        if self.ipus_per_replica is None:
            self.ipus_per_replica = len(self.layers_per_ipu)
        if self.inference_layers_per_ipu is None:
            self.inference_layers_per_ipu = list(self.layers_per_ipu)
        if self.inference_ipus_per_replica is None:
            follows_layers = self._release == "v0.7" and (
                self.ipus_per_replica == len(self.layers_per_ipu)
                or self.inference_layers_per_ipu != [-1])  # v0.5: one count for both modes
            self.inference_ipus_per_replica = (len(self.inference_layers_per_ipu) if follows_layers
                                               else self.ipus_per_replica)
        self.parallelize_kwargs = self.parallelize_kwargs or {}
        self.inference_parallelize_kwargs = self.inference_parallelize_kwargs or {}
        if self.inference_matmul_proportion is None:
            proportion = self.matmul_proportion
            fits = not isinstance(proportion, list) or len(proportion) == self.inference_ipus_per_replica
            fallback = _fields.INFERENCE_PROPORTION_FALLBACK[self._release]
            self.inference_matmul_proportion = copy.deepcopy(proportion) if fits else fallback
        for kind in ("embedding", "projection"):
            factor, splits = f"{kind}_serialization_factor", f"serialized_{kind}_splits_per_ipu"
            if getattr(self, f"inference_{factor}") is None and getattr(self, f"inference_{splits}") is None:
                setattr(self, f"inference_{factor}", getattr(self, factor))
                setattr(self, f"inference_{splits}", copy.deepcopy(getattr(self, splits)))
            for prefix in ("", "inference_"):
                if getattr(self, prefix + factor) is None and getattr(self, prefix + splits) is None:
                    setattr(self, prefix + factor, 1)

    # --- modes ----------------------------------------------------------------------------------
    @property
    def mode(self) -> str:
        """"training" or "inference": which variant the managed `_X` attributes use."""
        return self._mode

    @mode.setter
    def mode(self, value: str) -> None:
        if value not in _MODES:
            raise ValueError(f"`IPUConfig` mode can only take values in {_MODES}. You provided "
                             f"mode={value!r}; use config.train() or config.eval().")
        object.__setattr__(self, "_mode", value)

    def train(self) -> "IPUConfig":
        """Switch to training mode (managed attributes read `X`) and return self."""
        self.mode = "training"
        return self

    def eval(self) -> "IPUConfig":
        """Switch to inference mode (managed attributes read `inference_X`) and return self."""
        self.mode = "inference"
        return self

    def _get_managed_attr_mode_name(self, attr: str) -> str:
        """`attr` in training mode, `inference_attr` in inference mode when that exists."""
        inference = f"inference_{attr}"
        return inference if self._mode == "inference" and inference in _fields.FIELDS else attr

    # --- whole-config validation ----------------------------------------------------------------
    def _validate_ipu_config(self) -> None:
        """Check that the values agree with each other, in both modes."""
        if self.replicated_tensor_sharding and self.replication_factor == 1:
            _logger.warning("`replicated_tensor_sharding` is not used when `replication_factor=1`")
        previous = self._mode
        try:
            for mode in _MODES:
                self.mode = mode
                self._validate_current_mode()
        finally:
            self.mode = previous

    def _validate_current_mode(self) -> None:
        name = self._get_managed_attr_mode_name
        ipus = self._ipus_per_replica
        ipus_text = f"{name('ipus_per_replica')}={ipus}"
        proportion = self._matmul_proportion
        v05 = self._release == "v0.5"  # v0.5 read the first ipus_per_replica proportions only
        if isinstance(proportion, list) and (len(proportion) < ipus if v05
                                             else len(proportion) != ipus):
            raise IncompatibleIPUConfigError(
                f"{name('matmul_proportion')}={proportion} should use the same number of IPUs as "
                f"{ipus_text}. Give one proportion per IPU, or a single float for all of them.")
        layers = self._layers_per_ipu
        if -1 not in layers and len(layers) != ipus and not v05:
            raise IncompatibleIPUConfigError(
                f"{name('layers_per_ipu')}={layers} should use the same number of IPUs as "
                f"{ipus_text}. Give one entry per IPU, or use -1 to let each IPU take an even share.")
        for kind in ("embedding", "projection"):
            factor = getattr(self, f"_{kind}_serialization_factor")
            splits = getattr(self, f"_serialized_{kind}_splits_per_ipu")
            factor_name = name(f"{kind}_serialization_factor")
            splits_name = name(f"serialized_{kind}_splits_per_ipu")
            if factor is not None and splits is not None:
                raise ValueError(f"Only one of `{factor_name}` and `{splits_name}` may be set; "
                                 f"you provided {factor_name}={factor} and {splits_name}={splits}. "
                                 f"Set the other one to None.")
            if splits is not None and len(splits) != ipus:
                raise ValueError(f"{splits_name}={splits} should use the same number of IPUs as "
                                 f"{ipus_text}. Give one entry per IPU (0 where it has no split).")

    # --- POD types ------------------------------------------------------------------------------
    def for_pod_type(self, pod_type: str | None = None) -> "IPUConfig":
        """A copy with every per-POD-type value replaced by the value for `pod_type`.

        Args:
            pod_type: "pod4", "pod8", "pod16", "pod32" or "pod64"; None takes each "default".

        Returns:
            A new IPUConfig, in the same mode, with plain values.

        Raises:
            ValueError: unknown POD type. RuntimeError: pod_type None and a value has no
            "default". KeyError: a value has no entry for `pod_type`.
        """
        if pod_type is not None and pod_type not in ALLOWED_POD_TYPES:
            raise ValueError(f"{pod_type} is not a correct value for a POD type, supported POD "
                             f"types: {', '.join(ALLOWED_POD_TYPES)}")
        values = {name: value if _fields.takes_dict(name) else
                  _fields.value_for_pod(name, value, pod_type)
                  for name, value in self.to_dict().items()}
        specialised = IPUConfig(**values, defaults_from=self._release)
        specialised.mode = self._mode
        return specialised

    # --- poptorch.Options -----------------------------------------------------------------------
    def to_options(self, for_inference: bool = False, compile_only: bool = False,
                   pod_type: str | None = None) -> poptorch.Options:
        """The poptorch.Options this configuration stands for.

        Training: pipelined execution; inference: sharded execution (both AutoStage.AutoIncrement,
        so each Block begun by `parallelize()` is a stage on the IPU it names). Unlike
        optimum-graphcore, no IPU hardware is needed: the IPUs are simulated.

        Args:
            for_inference: options for an inferenceModel rather than a trainingModel.
            compile_only: compile for an offline IPU (the executor compiles but will not run).
            pod_type: the POD type to specialise per-POD-type values for.

        Returns:
            A new poptorch.Options.

        Raises:
            IncompatibleIPUConfigError: when the values contradict each other.
            NotImplementedError: for execute_encoder_on_cpu_for_generation=True.
        """
        config = self.for_pod_type(pod_type) if (pod_type or self._has_pod_types) else self
        config._validate_ipu_config()
        if config.execute_encoder_on_cpu_for_generation:
            raise NotImplementedError("execute_encoder_on_cpu_for_generation is not supported yet.")
        previous = config.mode
        config.mode = "inference" if for_inference else "training"
        try:
            return config._build_options(for_inference, compile_only)
        finally:
            config.mode = previous

    def _build_options(self, for_inference: bool, compile_only: bool) -> poptorch.Options:
        opts = poptorch.Options().autoRoundNumIPUs(True)
        opts.replicationFactor(self.inference_replication_factor if for_inference
                               else self.replication_factor)
        opts.deviceIterations(self.inference_device_iterations if for_inference
                              else self.device_iterations)
        if not for_inference:
            opts.Training.gradientAccumulation(self.gradient_accumulation_steps)
            opts.Training.accumulationAndReplicationReductionType(poptorch.ReductionType.Mean)
            if self.auto_loss_scaling:
                opts.Training.setAutomaticLossScaling(True)
        opts.outputMode(poptorch.OutputMode.All if for_inference else _OUTPUT_MODES[self.output_mode])
        if self.seed:
            opts.randomSeed(self.seed)
        opts.TensorLocations.setOptimizerLocation(
            poptorch.TensorLocationSettings()
            .useOnChipStorage(not self.optimizer_state_offchip)
            .useReplicatedTensorSharding(self.replicated_tensor_sharding
                                         and opts.replication_factor > 1))
        strategy = poptorch.ShardedExecution if for_inference else poptorch.PipelinedExecution
        opts.setExecutionStrategy(strategy(poptorch.AutoStage.AutoIncrement))
        if compile_only:
            opts.useOfflineIpuTarget(_simulated_ipu_version())
        opts.setAvailableMemoryProportion(self._memory_proportions())
        if self.executable_cache_dir and self.executable_cache_dir != "disabled":
            opts.enableExecutableCaching(self.executable_cache_dir)
        opts.Precision.enableStochasticRounding(not for_inference)
        if self.enable_half_partials:
            opts.Precision.setPartialsType(torch.float16)
        _set_popart_flags(opts, for_inference and self.explicit_ir_inference)
        return opts

    def _memory_proportions(self) -> dict[str, float]:
        proportion = self._matmul_proportion
        per_ipu = proportion if isinstance(proportion, list) else [proportion] * self._ipus_per_replica
        return {f"IPU{i}": float(per_ipu[i]) for i in range(self._ipus_per_replica)}

    def batch_size_factor(self, for_inference: bool = False, pod_type: str | None = None) -> int:
        """Samples per call for a micro-batch of 1: R x A x D (training) or R x D (inference).

        Args:
            for_inference: use the inference replication factor and device iterations.
            pod_type: the POD type to specialise per-POD-type values for.

        Returns:
            The factor to multiply the micro-batch size by to get the combined batch size.
        """
        config = self.for_pod_type(pod_type) if (pod_type or self._has_pod_types) else self
        if for_inference:
            return config.inference_replication_factor * config.inference_device_iterations
        return (config.replication_factor * config.gradient_accumulation_steps
                * config.device_iterations)

    # --- strings, dicts and files ---------------------------------------------------------------
    def update_from_string(self, update_str: str) -> None:
        """Update attributes from "k=v,k2=v2": true/false for booleans, [a b c] for lists.

        Raises:
            ValueError: for an unknown key or a value that cannot be read as the attribute's type.
        """
        for pair in filter(None, (p.strip() for p in update_str.split(","))):
            key, sep, text = pair.partition("=")
            key, text = key.strip(), text.strip()
            if not sep or key not in _fields.FIELDS:
                raise ValueError(f"Key {key} isn't in the original config dict; valid keys are: "
                                 f"{', '.join(_fields.FIELDS)}")
            setattr(self, key, _fields.parse_value(key, text))

    def to_dict(self) -> dict[str, Any]:
        """Every attribute and its value (deep copies)."""
        return {name: copy.deepcopy(getattr(self, name)) for name in _fields.FIELDS}

    def to_diff_dict(self) -> dict[str, Any]:
        """The attributes whose values differ from a default IPUConfig()'s.

        Attributes still waiting to be derived (None while values are given per POD type)
        are left out: loading fills them in again.
        """
        defaults = IPUConfig().to_dict()
        return {k: v for k, v in self.to_dict().items()
                if v != defaults[k] and not (v is None and _fields.declared_default(k) is None)}

    def to_json_string(self, use_diff: bool = True) -> str:
        """JSON of `to_diff_dict()` (or of `to_dict()` with use_diff=False), keys sorted."""
        values = self.to_diff_dict() if use_diff else self.to_dict()
        return json.dumps(values, indent=2, sort_keys=True) + "\n"

    def to_json_file(self, json_file_path: str | os.PathLike, use_diff: bool = True) -> None:
        """Write `to_json_string(use_diff)` to `json_file_path`, atomically (use_diff: only the
        attributes that differ from the defaults, else every one)."""
        _write_text(json_file_path, self.to_json_string(use_diff=use_diff))  # atomic

    def save_pretrained(self, save_directory: str | os.PathLike) -> None:
        """Write `save_directory/ipu_config.json` (the directory is created if needed).

        Raises:
            AssertionError: if `save_directory` is an existing file (as transformers does).
        """
        if os.path.isfile(save_directory):
            raise AssertionError(f"Provided path ({save_directory}) should be a directory, not a file")
        os.makedirs(save_directory, exist_ok=True)
        self.to_json_file(os.path.join(save_directory, IPU_CONFIG_NAME))

    @classmethod
    def from_dict(cls, config_dict: dict[str, Any], **kwargs: Any) -> "IPUConfig":
        """An IPUConfig from a dict of attributes; `kwargs` override the dict's values."""
        _note_defaults_from(kwargs)
        return cls(**{**config_dict, **kwargs})

    @classmethod
    def from_json_file(cls, json_file: str | os.PathLike) -> "IPUConfig":
        """An IPUConfig from a JSON file of attributes, as to_json_file writes it (OSError when
        it is missing, damaged or not a JSON object)."""
        return cls(**_fields.read_config_file(json_file))

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path: str | os.PathLike,
                        **kwargs: Any) -> "IPUConfig":
        """Load `ipu_config.json` from a local directory, or a JSON file; `kwargs` override it.

        Raises:
            OSError: when the path is neither a directory holding ipu_config.json nor a file.
                Names on the Hugging Face Hub (such as "Graphcore/bert-base-ipu") cannot be
                downloaded: ipu_tutorials works offline.
        """
        _note_defaults_from(kwargs)
        path = os.fspath(pretrained_model_name_or_path)
        file = os.path.join(path, IPU_CONFIG_NAME) if os.path.isdir(path) else path
        if not os.path.isfile(file):
            where = (f"the directory {path!r} has no {IPU_CONFIG_NAME}" if os.path.isdir(path)
                     else f"{path!r} is not a local directory or file")
            raise OSError(f"Can't load the IPU configuration: {where}. ipu_tutorials works offline "
                          f"and does not download from the Hugging Face Hub; save the configuration "
                          f"with IPUConfig(...).save_pretrained(directory) (or copy the Hub's "
                          f"{IPU_CONFIG_NAME} into a directory) and pass that directory.")
        return cls.from_dict(_fields.read_config_file(file), **kwargs)

    def __eq__(self, other) -> bool:
        return isinstance(other, IPUConfig) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return f"IPUConfig {self.to_json_string(use_diff=False)}"


# Managed attributes: IPUConfig._layers_per_ipu and so on.
for _name in _fields.MANAGED:
    setattr(IPUConfig, f"_{_name}", _fields.Managed(_name))
