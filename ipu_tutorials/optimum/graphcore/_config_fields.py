"""The IPUConfig attributes: types, defaults, validators, per-POD-type values and parsing."""
from __future__ import annotations

import json
import math
from typing import Any, Callable

ALLOWED_POD_TYPES = ("pod4", "pod8", "pod16", "pod32", "pod64")
POD_KEYS = frozenset(ALLOWED_POD_TYPES) | {"default"}
OUTPUT_MODES = ("all", "sum", "final", "default")


class IncompatibleIPUConfigError(ValueError):
    """The IPUConfig's values contradict each other or the model they are applied to."""


# --- types --------------------------------------------------------------------------------------
def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_float(v) -> bool:  # typeguard accepts an int where a float is hinted (PEP 484)
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _list_of(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, list) and all(check(x) for x in v)


def _optional(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: v is None or check(v)


# kind -> (the type hint shown in errors, the check)
KINDS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "int": ("int", _is_int),
    "opt_int": ("Optional[int]", _optional(_is_int)),
    "bool": ("bool", lambda v: isinstance(v, bool)),
    "str": ("str", lambda v: isinstance(v, str)),
    "int_list": ("List[int]", _list_of(_is_int)),
    "opt_int_list": ("Optional[List[int]]", _optional(_list_of(_is_int))),
    "proportion": ("Union[float, List[float]]",
                   lambda v: _is_float(v) or _list_of(_is_float)(v)),
    "opt_proportion": ("Optional[Union[float, List[float]]]",
                       _optional(lambda v: _is_float(v) or _list_of(_is_float)(v))),
    "opt_dict": ("Optional[Dict[str, Any]]",
                 _optional(lambda v: isinstance(v, dict) and all(isinstance(k, str) for k in v))),
}

# name -> (kind, default): optimum-graphcore v0.7.1's defaults (ipu_configuration.py). None means
# "derived in IPUConfig.__init__" (ipus_per_replica from layers_per_ipu, inference_* from the
# training value, serialization factors 1 unless per-IPU splits are given).
FIELDS: dict[str, tuple[str, Any]] = {
    "seed": ("opt_int", None),
    "auto_loss_scaling": ("bool", False),
    "executable_cache_dir": ("str", ""),
    "output_mode": ("str", "final"),
    "replication_factor": ("int", 1),
    "inference_replication_factor": ("int", 1),
    "gradient_accumulation_steps": ("int", 1),
    "device_iterations": ("int", 1),
    "inference_device_iterations": ("int", 1),
    "layers_per_ipu": ("int_list", [-1]),
    "inference_layers_per_ipu": ("opt_int_list", None),
    "ipus_per_replica": ("opt_int", None),
    "inference_ipus_per_replica": ("opt_int", None),
    "parallelize_kwargs": ("opt_dict", None),
    "inference_parallelize_kwargs": ("opt_dict", None),
    "optimizer_state_offchip": ("bool", False),
    "replicated_tensor_sharding": ("bool", False),
    "matmul_proportion": ("proportion", 0.2),
    "inference_matmul_proportion": ("opt_proportion", None),
    "enable_half_partials": ("bool", True),
    "embedding_serialization_factor": ("opt_int", None),
    "inference_embedding_serialization_factor": ("opt_int", None),
    "serialized_embedding_splits_per_ipu": ("opt_int_list", None),
    "inference_serialized_embedding_splits_per_ipu": ("opt_int_list", None),
    "projection_serialization_factor": ("opt_int", None),
    "inference_projection_serialization_factor": ("opt_int", None),
    "serialized_projection_splits_per_ipu": ("opt_int_list", None),
    "inference_serialized_projection_splits_per_ipu": ("opt_int_list", None),
    "recompute_checkpoint_every_layer": ("bool", False),
    "explicit_ir_inference": ("bool", False),
    "execute_encoder_on_cpu_for_generation": ("bool", False),
}

# Where the v0.2-v0.5 releases had other defaults. A configuration of that era (one
# that gives values per POD type, or the v0.5 key sharded_execution_for_inference) takes these
# for what it leaves out; IPUConfig(defaults_from="v0.5" or "v0.7") picks explicitly.
# ipus_per_replica: v0.1-v0.5 `kwargs.pop("ipus_per_replica", 1)`; v0.6+ len(layers_per_ipu).
RELEASE_DEFAULTS = {
    "v0.7": {},
    "v0.5": {"matmul_proportion": 0.6, "optimizer_state_offchip": True, "ipus_per_replica": 1},
}
# The inference proportion where the training list cannot be reused: 0.2 in v0.6+ (0.6 before).
INFERENCE_PROPORTION_FALLBACK = {"v0.7": 0.2, "v0.5": 0.6}


def release_of(kwargs: dict) -> str:
    """Which release's defaults fill what `kwargs` leaves out: "v0.5" or "v0.7"."""
    chosen = kwargs.pop("defaults_from", None)
    if chosen is not None:
        if chosen not in RELEASE_DEFAULTS:
            raise ValueError(f"defaults_from={chosen!r} is not a release with its own defaults; "
                             f"use one of {', '.join(RELEASE_DEFAULTS)}")
        return chosen
    legacy = "sharded_execution_for_inference" in kwargs or any(
        is_pod_dict(v) for k, v in kwargs.items() if k in FIELDS and FIELDS[k][0] != "opt_dict")
    return "v0.5" if legacy else "v0.7"


def default_of(name: str, release: str):
    return RELEASE_DEFAULTS[release].get(name, FIELDS[name][1])


# Attributes with a training and an inference value; IPUConfig's mode picks which one
# `_name` reads and writes (optimum-graphcore v0.6+).
MANAGED = ("layers_per_ipu", "ipus_per_replica", "matmul_proportion", "parallelize_kwargs",
           "embedding_serialization_factor", "serialized_embedding_splits_per_ipu",
           "projection_serialization_factor", "serialized_projection_splits_per_ipu")

# Keys written by other tools into ipu_config.json files: read and ignored.
METADATA_KEYS = frozenset({"optimum_version", "transformers_version", "ipu_tutorials_version"})

# The smallest value each numeric attribute (or each element of a list) may take.
FLOORS = {"layers_per_ipu": -1, "inference_layers_per_ipu": -1,
          "matmul_proportion": 0, "inference_matmul_proportion": 0}
FLOORS.update({name: 1 for name in (
    "replication_factor", "inference_replication_factor", "gradient_accumulation_steps",
    "ipus_per_replica", "inference_ipus_per_replica", "device_iterations",
    "inference_device_iterations", "embedding_serialization_factor",
    "inference_embedding_serialization_factor", "projection_serialization_factor",
    "inference_projection_serialization_factor")})
SPLITS = ("serialized_embedding_splits_per_ipu", "inference_serialized_embedding_splits_per_ipu",
          "serialized_projection_splits_per_ipu", "inference_serialized_projection_splits_per_ipu")


def is_pod_dict(value) -> bool:
    """A value given per POD type: a non-empty dict keyed by "default", "pod4" ... "pod64"."""
    return isinstance(value, dict) and bool(value) and value.keys() <= POD_KEYS


def check_type(name: str, value) -> None:
    """Raise TypeError unless `value` matches the attribute's type hint."""
    hint, check = KINDS[FIELDS[name][0]]
    if not check(value):
        raise TypeError(f"Setting `IPUConfig` attribute: {name}, type: {hint} with value={value!r}, "
                        f"type: {type(value).__name__} is invalid. Give {name} a value of type "
                        f"{hint}, e.g. {FIELDS[name][1]!r}.")


def check_value(name: str, value) -> None:
    """The per-attribute rules: floors, output modes and serialized splits."""
    if value is None:
        return
    if not _finite(value):  # NaN or infinity would be saved as non-standard JSON and break plans
        raise ValueError(f"`IPUConfig` attribute `{name}` must hold finite numbers. You provided "
                         f"{name}={value!r}; give a real number, e.g. {FIELDS[name][1]!r}")
    if name in FLOORS:
        floor = FLOORS[name]
        if isinstance(value, list) and any(v < floor for v in value):
            raise ValueError(f"`IPUConfig` attribute `{name}` must have all elements >= {floor}. "
                             f"You provided {name}={value}")
        if not isinstance(value, list) and value < floor:
            raise ValueError(f"`IPUConfig` attribute `{name}` must be >= {floor}. "
                             f"You provided {name}={value}")
    if name == "output_mode" and value not in OUTPUT_MODES:
        raise ValueError(f"`IPUConfig` attribute `output_mode` can only take values in "
                         f"{', '.join(OUTPUT_MODES)}. You provided output_mode={value!r}")
    if name in SPLITS:
        _check_splits(name, value)


def _finite(value) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (list, tuple)):
        return all(_finite(v) for v in value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    return True


def _check_splits(name: str, value: list[int]) -> None:
    if any(v < 0 for v in value):
        raise ValueError(f"`IPUConfig` attribute `{name}` must have all elements >= 0. "
                         f"You provided {name}={value}")
    if sum(value) < 1:
        raise ValueError(f"`IPUConfig` attribute `{name}={value}` must have atleast 1 split on "  # (sic, as optimum-graphcore words it)
                         f"1 IPU, e.g. [2, 0, 0, 0].")
    used = [i for i, v in enumerate(value) if v]
    if used != list(range(used[0], used[-1] + 1)):
        raise ValueError(f"`IPUConfig` attribute `{name}={value}` must have its splits on "
                         f"consecutive IPUs, e.g. [0, 3, 2, 0] rather than [0, 3, 0, 2].")


def validate(name: str, value) -> None:
    """Type and value checks of one attribute; a POD-type dict is checked value by value."""
    if is_pod_dict(value) and FIELDS[name][0] != "opt_dict":
        for pod_value in value.values():
            validate(name, pod_value)
        return
    check_type(name, value)
    check_value(name, value)


class Managed:
    """`config._X` reads and writes `X` in training mode and `inference_X` in inference mode."""

    def __init__(self, name: str):
        self.name = name

    def __get__(self, config, owner=None):
        return getattr(config, config._get_managed_attr_mode_name(self.name))

    def __set__(self, config, value):
        setattr(config, config._get_managed_attr_mode_name(self.name), value)


def value_for_pod(name: str, value, pod_type: str | None):
    """The value of attribute `name` for `pod_type` (None: the "default" entry)."""
    if not is_pod_dict(value):
        return value
    if pod_type is None:
        if "default" not in value:
            raise RuntimeError(f"No POD type was specified and no default value was provided for "
                               f"{name}, cannot infer which value to use. Pass pod_type (one of "
                               f"{', '.join(ALLOWED_POD_TYPES)}) or add a \"default\" entry.")
        return value["default"]
    if pod_type not in value:
        raise KeyError(f"the {name} configuration field does not contain a value for POD type "
                       f"{pod_type}; add a {pod_type!r} entry to {name}={value}")
    return value[pod_type]


def parse_value(key: str, text: str):
    """A value for `key` read from update_from_string's text, by the attribute's type."""
    kind = FIELDS[key][0]
    if kind == "bool":
        lowered = text.lower()
        if lowered in ("true", "1", "y", "yes"):
            return True
        if lowered in ("false", "0", "n", "no"):
            return False
        raise ValueError(f"Can't derive true or false from {text} (key {key})")
    if kind == "str":
        return text
    if text.lower() == "none" and kind.startswith("opt"):
        return None
    try:
        value = json.loads(text.replace(" ", ",")) if text.startswith("[") else json.loads(text)
    except (json.JSONDecodeError, RecursionError):  # RecursionError: absurdly nested lists
        raise ValueError(f"Can't read {text!r} as a value of {key} "
                         f"({KINDS[kind][0]}); write lists as [a b c]") from None
    return value
