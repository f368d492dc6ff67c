"""Options declared once: `Option` says what one option is, `_OptionGroup` holds a group's values.

An option is a class attribute of its group, e.g. `_TrainingOptions.gradient_accumulation =
Option(1, setter="gradientAccumulation", check=check_int, spec="gradient_accumulation")`.
Everything else is derived from that declaration: the setter's check (`_OptionGroup._set`),
PopTorch's generic `set(**values)`, `toDict()` and `fromDict()` (`_options_dict.py`), the
setters an options file may call (`_options_file.py`) and the simulator's `RunSpec`
(`spec_fields`, read by `_to_simulator.options_spec`). A value is a plain instance attribute
(`opts.Training.gradient_accumulation`), written only by `_set`.
"""
from __future__ import annotations

import copy
import enum
import functools
from typing import Any, Callable, Generic, TypeVar, overload

import torch

from ..errors import Error

T = TypeVar("T")
Check = Callable[[str, Any], Any]  # (where, value) -> the value to store; raises naming `where`


class Option(Generic[T]):
    """One PopTorch option: its setter, default, check, name in toDict() and RunSpec field.

    Args:
        default: the value a new Options holds (each Options gets its own copy).
        setter: PopTorch's method that sets it ("gradientAccumulation"); errors name it.
        check: (where, value) -> the value to store, raising TypeError or ValueError that
            names `where`; None when the setter checks its arguments itself.
        argument: the setter's argument it comes from, when the setter takes several
            ("num_processes"): errors then name "configureProcessId(num_processes)".
        kind: the type(s) `set(**values)` and fromDict() accept (default: the default's type;
            None accepts anything).
        key: its name in PopTorch's dicts (toDict, repr); the attribute's name by default.
        to_flat: value -> its entries in Options.toDict()'s flat dict (default {key: value}).
        from_flat: flat dict -> the value, for Options.fromDict() (default: the `key` entry).
        flat_keys: every key of the flat dict that to_flat writes (default: `key`).
        spec: the field of the simulator's RunSpec it fills; None when the simulator does
            not read it.
        to_spec: value -> that field's value (default: the value itself).
        optional: absent until its setter runs (PopTorch's createOrSet): reading it raises
            AttributeError until then, and toDict() and repr leave it out.
    """

    def __init__(self, default: T, *, setter: str, check: Check | None = None,
                 argument: str = "", kind: type | tuple[type, ...] | None = None,
                 key: str | None = None, to_flat: Callable[[T], dict] | None = None,
                 from_flat: Callable[[dict], T] | None = None, flat_keys: tuple[str, ...] = (),
                 spec: str | None = None, to_spec: Callable[[T], Any] | None = None,
                 optional: bool = False):
        self.default, self.setter, self.check, self.argument = default, setter, check, argument
        self.kind = kind or (None if default is None else type(default))
        self.key, self.spec, self.optional = key, spec, optional
        self._to_flat, self._from_flat, self._flat_keys = to_flat, from_flat, flat_keys
        self._to_spec = to_spec
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name
        self.key = self.key or name

    @overload
    def __get__(self, group: None, owner: type) -> Option[T]: ...
    @overload
    def __get__(self, group: object, owner: type) -> T: ...

    def __get__(self, group, owner=None):
        """The declaration, read on the class. Read on a group, only an optional option that
        is still unset gets here (a value is an instance attribute, which Python finds first):
        AttributeError, as PopTorch's createOrSet options give."""
        if group is None:
            return self
        raise AttributeError(self.name)  # the group's __getattr__ then says it is not set

    @property
    def flat_keys(self) -> tuple[str, ...]:
        """The keys of the flat dict this option's entries use."""
        return self._flat_keys or (self.key,)

    def to_flat(self, value) -> dict:
        """Its entries in PopTorch's flat backend dict; nothing while it is None."""
        if value is None:
            return {}
        return self._to_flat(value) if self._to_flat else {self.key: backend_value(value)}

    def from_flat(self, data: dict):
        """Its value read back from a flat dict (an enum from its number)."""
        if self._from_flat:
            return self._from_flat(data)
        value = data[self.key]
        default = self.default
        return type(default)(value) if isinstance(default, enum.Enum) else value

    def to_spec(self, value):
        """The value of its RunSpec field."""
        return self._to_spec(value) if self._to_spec else value

    def __repr__(self) -> str:
        return f"Option({self.default!r}, setter={self.setter!r})"


class Group:
    """A group of options hung off Options (`opts.Training`): its class, and whether toDict()
    merges its values into PopTorch's flat backend dict (PopTorch leaves Precision and Jit out)."""

    def __init__(self, cls: type, flat: bool = True):
        self.cls, self.flat, self.name = cls, flat, ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, options, owner=None):
        if options is None:
            return self
        raise AttributeError(f"{self.name} is not built yet")  # Options.__init__ builds it


def backend_value(value):
    """Enums become their values (as PopTorch stores them); containers are copied."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {k: backend_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(backend_value(v) for v in value)
    return value


def plain(value):
    """A JSON-friendly copy of an option value (enums by name, dtypes as "float16")."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, torch.dtype):
        return str(value).replace("torch.", "")
    if isinstance(value, enum.Enum):
        return value.name
    return value


def shown(value) -> str:
    """How repr shows a value: enums as OutputMode.All, everything else by its repr."""
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    return repr(value)


def _declarations(cls: type, kind: type) -> tuple:
    """The `kind` declarations of a class and its bases (the class's own first), in the order
    they are written."""
    found: dict = {}
    for klass in cls.__mro__:
        for name, value in vars(klass).items():
            if isinstance(value, kind):
                found.setdefault(name, value)
    return tuple(found.values())


@functools.cache
def declared(cls: type) -> tuple[Option, ...]:
    """The options a group class declares."""
    return _declarations(cls, Option)


@functools.cache
def groups(cls: type) -> tuple[Group, ...]:
    """The groups a class declares (Options: Training, Precision, ...)."""
    return _declarations(cls, Group)


def setters(cls: type) -> frozenset[str]:
    """The methods that set a group's options: each declared option's setter, and the ones
    the class lists in `_more_setters` (setters of PopART options, Distributed.disable...)."""
    names = {option.setter for option in declared(cls)}
    for klass in cls.__mro__:
        names.update(vars(klass).get("_more_setters", ()))
    return frozenset(names)


class _OptionGroup:
    """The values of one group's declared options; frozen once a model or DataLoader uses them.

    Values are set by the group's setters (which call `_set`) or by `set(**values)`, never by
    assignment. A deep copy is a fresh, modifiable group, as in PopTorch.
    """

    _prefix = ""  # how errors name the group's setters: "Training." for opts.Training

    def __init__(self):
        object.__setattr__(self, "_frozen", False)
        for option in declared(type(self)):
            if not option.optional:
                object.__setattr__(self, option.name, copy.deepcopy(option.default))

    def __getattr__(self, name):
        """Reached only for an optional option not set yet, or a name nothing declares."""
        if name.startswith("__"):
            raise AttributeError(name)
        option = getattr(type(self), name, None)
        if isinstance(option, Option):
            raise AttributeError(f"{type(self).__name__}.{name} is not set; "
                                 f"{option.setter}() sets it")
        names = ", ".join(sorted(o.name for o in declared(type(self))))
        raise AttributeError(f"{type(self).__name__} has no option {name!r}; "
                             f"its options are: {names}")

    def __setattr__(self, name, value):
        if name == "__class__" and isinstance(value, type) and issubclass(value, type(self)):
            object.__setattr__(self, name, value)  # popdist swaps a group for a subclass of it
            return
        raise AttributeError(f"set options with their methods (for example "
                             f"opts.deviceIterations(4)), not by assigning {name!r}")

    def _check_not_frozen(self, what: str = "an option") -> None:
        if self._frozen:
            raise Error(f"cannot change {what}: these Options are frozen because a "
                        f"poptorch.DataLoader or wrapped model already uses them. Call "
                        f"options.clone() and change the copy instead.")

    def _option(self, name: str) -> Option:
        """The declaration of `name`; an unknown name is an error, never a new option."""
        option = getattr(type(self), name, None)
        if not isinstance(option, Option):
            valid = ", ".join(sorted(o.name for o in declared(type(self))))
            raise ValueError(f"unknown option {name!r} for {type(self).__name__}; "
                             f"valid names: {valid}")
        return option

    def _checked(self, **values) -> dict:
        """Each value as its declaration's check returns it; errors name the setter."""
        checked = {}
        for name, value in values.items():
            option = self._option(name)
            if option.check is not None:
                where = f"{self._prefix}{option.setter}({option.argument})"
                value = option.check(where, value)
            checked[name] = value
        return checked

    def _store(self, values: dict):
        """Store checked values (all of them, or none when the group is frozen)."""
        self._check_not_frozen(repr(next(iter(values))))
        for name, value in values.items():
            object.__setattr__(self, name, value)
        return self

    def _set(self, **values):
        """Check each value with its declaration and store them all, or none when one is
        refused; returns the group, as PopTorch's setters do."""
        return self._store(self._checked(**values))

    def set(self, **values):
        """Set options by their attribute names, each to a value of its declared type
        (PopTorch's generic `OptionsDict.set`); the setters, with their checks, are the usual
        way. Nothing is stored when one value is refused.

        Raises:
            ValueError: a name the group does not declare. TypeError: a value of another type.
        """
        for name, value in values.items():
            kind = self._option(name).kind
            wrong_bool = isinstance(value, bool) and kind is not bool
            if kind is not None and (wrong_bool or not isinstance(value, kind)):
                expected = ", ".join(k.__name__ for k in kind) if isinstance(kind, tuple) \
                    else kind.__name__
                raise TypeError(f"option {name!r} expects {expected}, "
                                f"got {type(value).__name__} {value!r}")
        return self._store(values) if values else self

    def _items(self) -> list[tuple[Option, Any]]:
        """(declaration, value) of every option that has a value (an optional one once set)."""
        held = vars(self)
        return [(o, held[o.name]) for o in declared(type(self)) if o.name in held]

    def flat_entries(self) -> dict:
        """The group's entries in PopTorch's flat backend dict (see Options.toDict)."""
        entries = {}
        for option, value in self._items():
            entries.update(option.to_flat(value))
        return entries

    def spec_fields(self) -> dict:
        """The RunSpec fields this group's options fill, as their declarations map them."""
        return {o.spec: o.to_spec(v) for o, v in self._items() if o.spec is not None}

    def _freeze(self) -> None:
        object.__setattr__(self, "_frozen", True)

    def __setstate__(self, state: dict) -> None:
        """A group as PoplarExecutor.save pickled it. A file saved before the options were
        declared holds them in `_values` by PopTorch's names (and Options' groups in `_groups`,
        its strategy in `_strategy`); an option added since takes its default."""
        state = dict(state)
        by_key = {o.key: o.name for o in declared(type(self))}
        for key, value in state.pop("_values", {}).items():
            state[by_key.get(key, key)] = value
        state.update(state.pop("_groups", {}))
        if "_strategy" in state:
            state["execution_strategy"] = state.pop("_strategy")
        for option in declared(type(self)):
            if not option.optional and option.name not in state:
                state[option.name] = copy.deepcopy(option.default)
        self.__dict__.update(state)

    def __deepcopy__(self, memo):
        clone = object.__new__(type(self))
        memo[id(self)] = clone
        for name, value in self.__dict__.items():
            object.__setattr__(clone, name, copy.deepcopy(value, memo))
        object.__setattr__(clone, "_frozen", False)
        return clone

    def toDict(self) -> dict:
        """The group's values by PopTorch's names, JSON-friendly (enums by name)."""
        return {o.key: plain(v) for o, v in self._items()}

    def __repr__(self) -> str:
        body = ", ".join(f"{o.key}={shown(v)}" for o, v in self._items())
        return f"{type(self).__name__}({body})"
