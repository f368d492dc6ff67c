"""The IPUConfig attributes declared once (a dataclass of type hints and defaults), their
checks, per-POD-type values and parsing."""
from __future__ import annotations

import dataclasses
import json
import math
import os
import typing
from typing import Any, Callable, Dict, List, Optional, Union

from ...support.atomic_io import FileFormatError, read_json

ALLOWED_POD_TYPES = ("pod4", "pod8", "pod16", "pod32", "pod64")
POD_KEYS = frozenset(ALLOWED_POD_TYPES) | {"default"}
OUTPUT_MODES = ("all", "sum", "final", "default")


class IncompatibleIPUConfigError(ValueError):
    """The IPUConfig's values contradict each other or the model they are applied to."""


# --- the declaration -----------------------------------------------------------------------------
# IPUConfig's attributes are the fields of a dataclass: each with optimum-graphcore v0.7.1's type
# hint and default (the signature of its IPUConfig.__init__), and, in its metadata, the smallest
# value it may take or its own rule. Why dataclasses: they are the standard library, and
# IPUConfig works without any extra (lessons 7, 12, 13 and 15 use it), so a library such as
# pydantic or typeguard would be a new core dependency. The hints are checked by `matches`, the
# same rules optimum-graphcore asks of typeguard (every list element checked, an int accepted
# where a float is hinted, PEP 484), except that a bool is not an int here.
def _field(default, *, floor: int | None = None, rule: Callable[[str, Any], None] | None = None):
    """A field whose default is copied for each IPUConfig; `floor` and `rule` add checks."""
    metadata = {"floor": floor, "rule": rule}
    if isinstance(default, list):
        return dataclasses.field(default_factory=lambda: list(default), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def _output_mode(name: str, value: str) -> None:
    if value not in OUTPUT_MODES:
        raise ValueError(f"`IPUConfig` attribute `output_mode` can only take values in "
                         f"{', '.join(OUTPUT_MODES)}. You provided output_mode={value!r}")


def _splits(name: str, value: list[int]) -> None:
    """serialized_*_splits_per_ipu: at least one split, on consecutive IPUs."""
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


@dataclasses.dataclass(init=False, repr=False, eq=False)
class IPUConfigFields:
    """optimum-graphcore v0.7.1's IPUConfig attributes: type hints and defaults. None means
    "derived in IPUConfig.__init__" (ipus_per_replica from layers_per_ipu, inference_* from the
    training value, serialization factors 1 unless per-IPU splits are given)."""

    seed: Optional[int] = _field(None)
    auto_loss_scaling: bool = _field(False)
    executable_cache_dir: str = _field("")
    output_mode: str = _field("final", rule=_output_mode)
    replication_factor: int = _field(1, floor=1)
    inference_replication_factor: int = _field(1, floor=1)
    gradient_accumulation_steps: int = _field(1, floor=1)
    device_iterations: int = _field(1, floor=1)
    inference_device_iterations: int = _field(1, floor=1)
    layers_per_ipu: List[int] = _field([-1], floor=-1)  # -1: an even share of what is left
    inference_layers_per_ipu: Optional[List[int]] = _field(None, floor=-1)
    ipus_per_replica: Optional[int] = _field(None, floor=1)
    inference_ipus_per_replica: Optional[int] = _field(None, floor=1)
    parallelize_kwargs: Optional[Dict[str, Any]] = _field(None)
    inference_parallelize_kwargs: Optional[Dict[str, Any]] = _field(None)
    optimizer_state_offchip: bool = _field(False)
    replicated_tensor_sharding: bool = _field(False)
    matmul_proportion: Union[float, List[float]] = _field(0.2, floor=0)
    inference_matmul_proportion: Optional[Union[float, List[float]]] = _field(None, floor=0)
    enable_half_partials: bool = _field(True)
    embedding_serialization_factor: Optional[int] = _field(None, floor=1)
    inference_embedding_serialization_factor: Optional[int] = _field(None, floor=1)
    serialized_embedding_splits_per_ipu: Optional[List[int]] = _field(None, rule=_splits)
    inference_serialized_embedding_splits_per_ipu: Optional[List[int]] = _field(None, rule=_splits)
    projection_serialization_factor: Optional[int] = _field(None, floor=1)
    inference_projection_serialization_factor: Optional[int] = _field(None, floor=1)
    serialized_projection_splits_per_ipu: Optional[List[int]] = _field(None, rule=_splits)
    inference_serialized_projection_splits_per_ipu: Optional[List[int]] = _field(None, rule=_splits)
    recompute_checkpoint_every_layer: bool = _field(False)
    explicit_ir_inference: bool = _field(False)
    execute_encoder_on_cpu_for_generation: bool = _field(False)


FIELDS: dict[str, dataclasses.Field] = {f.name: f for f in dataclasses.fields(IPUConfigFields)}
HINTS: dict[str, Any] = typing.get_type_hints(IPUConfigFields)


def matches(value, hint) -> bool:
    """Whether `value` is of the type `hint` (Optional, Union, List, Dict, Any and classes)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return True
    if origin is Union:
        return any(matches(value, arg) for arg in args)
    if origin is list:
        return isinstance(value, list) and all(matches(v, args[0]) for v in value)
    if origin is dict:
        return isinstance(value, dict) and all(matches(k, args[0]) and matches(v, args[1])
                                               for k, v in value.items())
    if isinstance(value, bool) and hint is not bool:
        return False  # True is an int to Python, not to IPUConfig
    if hint is float:
        return isinstance(value, (int, float))  # PEP 484: an int is accepted as a float
    return isinstance(value, hint)


def hint_text(name: str) -> str:
    """The attribute's type hint as it is written above: Optional[List[int]]."""
    return _written(HINTS[name])


def _written(hint) -> str:
    """typing keeps Optional[Union[a, b]] as Union[a, b, None]; write it as it was declared."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Union:
        given = [a for a in args if a is not type(None)]
        inner = (_written(given[0]) if len(given) == 1 else
                 "Union[" + ", ".join(_written(a) for a in given) + "]")
        return f"Optional[{inner}]" if len(given) < len(args) else inner
    if origin in (list, dict):
        return f"{origin.__name__.title()}[" + ", ".join(_written(a) for a in args) + "]"
    return "Any" if hint is Any else hint.__name__


def declared_default(name: str):
    """The field's default (a fresh copy of a list)."""
    field = FIELDS[name]
    return (field.default_factory() if field.default_factory is not dataclasses.MISSING
            else field.default)


def takes_dict(name: str) -> bool:
    """Whether the attribute's own values are dicts (parallelize_kwargs), so that a dict given
    for it is not a value per POD type."""
    return any(typing.get_origin(arg) is dict for arg in (HINTS[name], *typing.get_args(HINTS[name])))


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
        is_pod_dict(v) for k, v in kwargs.items() if k in FIELDS and not takes_dict(k))
    return "v0.5" if legacy else "v0.7"


def default_of(name: str, release: str):
    """The attribute's default in `release` ("v0.5" or "v0.7")."""
    return RELEASE_DEFAULTS[release].get(name, declared_default(name))


# Attributes with a training and an inference value; IPUConfig's mode picks which one
# `_name` reads and writes (optimum-graphcore v0.6+).
MANAGED = ("layers_per_ipu", "ipus_per_replica", "matmul_proportion", "parallelize_kwargs",
           "embedding_serialization_factor", "serialized_embedding_splits_per_ipu",
           "projection_serialization_factor", "serialized_projection_splits_per_ipu")

# Keys written by other tools into ipu_config.json files: read and ignored.
METADATA_KEYS = frozenset({"optimum_version", "transformers_version", "ipu_tutorials_version"})

def is_pod_dict(value) -> bool:
    """A value given per POD type: a non-empty dict keyed by "default", "pod4" ... "pod64"."""
    return isinstance(value, dict) and bool(value) and value.keys() <= POD_KEYS


def check_type(name: str, value) -> None:
    """Raise TypeError unless `value` matches the attribute's type hint."""
    if not matches(value, HINTS[name]):
        hint = hint_text(name)
        raise TypeError(f"Setting `IPUConfig` attribute: {name}, type: {hint} with value={value!r}, "
                        f"type: {type(value).__name__} is invalid. Give {name} a value of type "
                        f"{hint}, e.g. {declared_default(name)!r}.")


def check_value(name: str, value) -> None:
    """The per-attribute rules: finite numbers, the field's floor and its own rule."""
    if value is None:
        return
    if not _finite(value):  # NaN or infinity would be saved as non-standard JSON and break plans
        raise ValueError(f"`IPUConfig` attribute `{name}` must hold finite numbers. You provided "
                         f"{name}={value!r}; give a real number, e.g. {declared_default(name)!r}")
    floor, rule = FIELDS[name].metadata["floor"], FIELDS[name].metadata["rule"]
    if floor is not None and isinstance(value, list) and any(v < floor for v in value):
        raise ValueError(f"`IPUConfig` attribute `{name}` must have all elements >= {floor}. "
                         f"You provided {name}={value}")
    if floor is not None and not isinstance(value, list) and value < floor:
        raise ValueError(f"`IPUConfig` attribute `{name}` must be >= {floor}. "
                         f"You provided {name}={value}")
    if rule is not None:
        rule(name, value)


def _finite(value) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (list, tuple)):
        return all(_finite(v) for v in value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    return True


def validate(name: str, value) -> None:
    """Type and value checks of one attribute; a POD-type dict is checked value by value."""
    if is_pod_dict(value) and not takes_dict(name):
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
    """A value for `key` read from update_from_string's text, by the attribute's type hint."""
    hint = HINTS[key]
    if hint is bool:
        lowered = text.lower()
        if lowered in ("true", "1", "y", "yes"):
            return True
        if lowered in ("false", "0", "n", "no"):
            return False
        raise ValueError(f"Can't derive true or false from {text} (key {key})")
    if hint is str:
        return text
    if text.lower() == "none" and type(None) in typing.get_args(hint):
        return None
    try:
        value = json.loads(text.replace(" ", ",")) if text.startswith("[") else json.loads(text)
    except (json.JSONDecodeError, RecursionError):  # RecursionError: absurdly nested lists
        raise ValueError(f"Can't read {text!r} as a value of {key} "
                         f"({hint_text(key)}); write lists as [a b c]") from None
    return value


def read_config_file(json_file: str | os.PathLike) -> dict[str, Any]:
    """The attributes saved in an ipu_config.json (a JSON object); a damaged file is one OSError."""
    try:
        values = read_json(json_file, "IPUConfig JSON file")
    except FileFormatError as error:  # transformers answers a bad config file with OSError
        raise OSError(str(error)) from None
    if not isinstance(values, dict):
        raise OSError(f"{os.fspath(json_file)} must hold a JSON object of IPUConfig "
                      f"attributes, got a {type(values).__name__}")
    return values
