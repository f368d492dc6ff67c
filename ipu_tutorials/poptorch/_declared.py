"""Options declared once: `Option` says what one option is, `_OptionGroup` holds a group's values.

An option is a class attribute of its group, e.g. `_TrainingOptions.gradient_accumulation =
Option(1, setter="gradientAccumulation", check=check_int, spec="gradient_accumulation")`.
Everything else is derived from that declaration: the setter's check (`_OptionGroup._set`),
PopTorch's generic `set(**values)`, `toDict()` and its inverse (`_options_dict.py`), the
setters an options file may call (`_options_file.py`) and the simulator's `RunSpec`
(`_spec_fields`, read by `_to_simulator.options_spec`). Values live in the group's `_values`;
an option PopTorch keeps is read by PopTorch's name and in its form
(`opts.Training.gradient_accumulation`).
"""
from __future__ import annotations

import copy
import enum
import functools
from typing import Any, Callable, Generic, TypeVar, overload

import torch


T = TypeVar("T")
Check = Callable[[str, Any], Any]  # (where, value) -> the value to store; raises naming `where`


def as_is(value):
    """An option PopTorch holds as it was given."""
    return value


def enum_value(value):
    """An option PopTorch holds as its enum's value (`opts.output_mode` is an int)."""
    return value.value if isinstance(value, enum.Enum) else value


class Option(Generic[T]):
    """One PopTorch option: its setter, default, check, name in toDict() and RunSpec field.

    Args:
        default: the value a new Options holds (each Options gets its own copy).
        setter: PopTorch's method that sets it ("gradientAccumulation"); errors name it.
        check: (where, value) -> the value to store, raising TypeError or ValueError that
            names `where`; None when the setter checks its arguments itself.
        argument: the setter's argument it comes from, when the setter takes several
            ("num_processes"): errors then name "configureProcessId(num_processes)".
        kind: the type(s) `set(**values)` and from_flat() accept (default: the default's type;
            None accepts anything).
        key: its name in PopTorch's dicts (toDict, repr); the attribute's name by default.
        to_flat: value -> its entries in Options.toDict()'s flat dict (default {key: value}).
        from_flat: flat dict -> the value, for _options_dict.from_flat() (default: the `key` entry).
        flat_keys: every key of the flat dict that to_flat writes (default: `key`).
        spec: the field of the simulator's RunSpec it fills; None when the simulator does
            not read it.
        to_spec: value -> that field's value (default: the value itself).
        optional: absent until its setter runs (PopTorch's createOrSet): reading it raises
            AttributeError until then, and toDict() and repr leave it out.
        held: how PopTorch holds the value when it is read as an attribute named `key`
            (`opts.output_mode` is the enum's int: `held=enum_value`), or None when PopTorch
            keeps it in no attribute (it goes to PopART, or to a private field): it is then
            the simulator's, read inside the facade with `group._value(name)`.
    """

    def __init__(self, default: T, *, setter: str, check: Check | None = None,
                 argument: str = "", kind: type | tuple[type, ...] | None = None,
                 key: str | None = None, to_flat: Callable[[T], dict] | None = None,
                 from_flat: Callable[[dict], T] | None = None, flat_keys: tuple[str, ...] = (),
                 spec: str | None = None, to_spec: Callable[[T], Any] | None = None,
                 optional: bool = False, held: Callable[[T], Any] | None = as_is):
        self.default, self.setter, self.check, self.argument = default, setter, check, argument
        self.kind = kind or (None if default is None else type(default))
        self.key, self.spec, self.optional, self.held = key, spec, optional, held
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
        """The declaration, read on the class. Read on a group: AttributeError, so that the
        group's __getattr__ answers, by PopTorch's name and in PopTorch's form."""
        if group is None:
            return self
        raise AttributeError(self.name)

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
def _readable(cls: type) -> dict[str, Option]:
    """The options PopTorch keeps as attributes, by PopTorch's name (its `key`)."""
    return {o.key: o for o in declared(cls) if o.held is not None}


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

    As in PopTorch's OptionsDict, the values live in a dict (`_values`, by declaration name)
    and an option PopTorch keeps is read as an attribute by PopTorch's name and in its form
    (`opts.output_mode` is an int); the rest are the simulator's, read with `_value`. Values
    are set by the group's setters (which call `_set`), by `set(**values)` or by assigning an
    attribute PopTorch has. A deep copy is a fresh, modifiable group, as in PopTorch.
    """

    _prefix = ""  # how errors name the group's setters: "Training." for opts.Training

    def __init__(self, **default_values):
        """A group with every option at its default; `default_values` (by PopTorch's names,
        as PopTorch's OptionsDict takes them) replace some."""
        object.__setattr__(self, "_frozen", False)
        object.__setattr__(self, "_values", {
            o.name: copy.deepcopy(o.default) for o in declared(type(self)) if not o.optional})
        if default_values:
            self.set(**default_values)

    def __getattr__(self, name):
        """An option PopTorch keeps, by its name and in its form; else AttributeError."""
        values = self.__dict__.get("_values")
        if name.startswith("_") or values is None:
            raise AttributeError(name)
        option = _readable(type(self)).get(name)
        if option is not None:
            if option.name not in values:
                raise AttributeError(f"{type(self).__name__}.{name} is not set; "
                                     f"{option.setter}() sets it")
            return option.held(values[option.name])
        names = ", ".join(sorted(_readable(type(self))))
        raise AttributeError(f"{type(self).__name__} has no option {name!r}; "
                             f"its options are: {names}")

    def __dir__(self):
        return [*super().__dir__(), *(k for k, o in _readable(type(self)).items()
                                      if o.name in self._values)]

    def __setattr__(self, name, value):
        """As in PopTorch, assigning an option PopTorch keeps is `set(name=value)`."""
        if name == "__class__" and isinstance(value, type) and issubclass(value, type(self)):
            object.__setattr__(self, name, value)  # popdist swaps a group for a subclass of it
            return
        if name.startswith("_"):
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r} to set")
        self.set(**{name: value})

    def _value(self, name: str):
        """The simulator's view of an option, by declaration name: as its setter stored it
        (an enum stays an enum), or its default while an optional one is unset."""
        values = self._values
        return values[name] if name in values else self._option(name).default

    def _check_not_frozen(self, what: str = "an option") -> None:
        if self._frozen:
            raise AttributeError(
                f"Can't modify frozen Options ({what}): a poptorch.DataLoader or wrapped "
                f"model already uses them. Call options.clone() and change the copy instead.")

    def _option(self, name: str) -> Option:
        """The declaration of `name`; an unknown name is an error, never a new option."""
        option = getattr(type(self), name, None)
        if not isinstance(option, Option):
            valid = ", ".join(sorted(o.name for o in declared(type(self))))
            raise ValueError(f"unknown option {name!r} for {type(self).__name__}; "
                             f"valid names: {valid}")
        return option

    def _checked(self, **values) -> dict:
        """Each value as its declaration's check returns it; errors name the setter.

        A value of the wrong type is an AssertionError, as in PopTorch, whose setters assert
        the type (`assert isinstance(...)`, or its OptionsDict.set's "Unexpected type").
        """
        checked = {}
        for name, value in values.items():
            option = self._option(name)
            if option.check is not None:
                where = f"{self._prefix}{option.setter}({option.argument})"
                try:
                    value = option.check(where, value)
                except TypeError as error:
                    raise AssertionError(str(error)) from None
            checked[name] = value
        return checked

    def _store(self, values: dict):
        """Store checked values (all of them, or none when the group is frozen)."""
        self._check_not_frozen(repr(next(iter(values))))
        self._values.update(values)
        return self

    def _set(self, **values):
        """Check each value with its declaration and store them all, or none when one is
        refused; returns the group, as PopTorch's setters do."""
        return self._store(self._checked(**values))

    def set(self, **kwargs) -> None:
        """Set options by PopTorch's attribute names (`set(device_iterations=4)`), each to a
        value of the type it holds, as PopTorch's generic `OptionsDict.set`; the setters,
        with their checks, are the usual way. Nothing is stored when one value is refused.

        Raises:
            AssertionError: a name PopTorch does not keep, or a value of another type (as
                PopTorch asserts).
        """
        readable = _readable(type(self))
        stored = {}
        for name, value in kwargs.items():
            assert name in readable, (f"Invalid option {name}, valid options are "
                                      f"{sorted(readable)}")
            option = readable[name]
            kind = int if option.held is enum_value else option.kind  # the type PopTorch holds
            wrong_bool = isinstance(value, bool) and kind is not bool
            assert kind is None or not (wrong_bool or not isinstance(value, kind)), (
                f"Unexpected type {type(value)} for option {name}. Expected {kind}")
            if option.held is enum_value:
                value = type(option.default)(value)  # the facade keeps the enum itself
            stored[option.name] = value
        if stored:
            self._store(stored)

    def _items(self) -> list[tuple[Option, Any]]:
        """(declaration, value) of every option that has a value (an optional one once set)."""
        held = self._values
        return [(o, held[o.name]) for o in declared(type(self)) if o.name in held]

    def _flat_entries(self) -> dict:
        """The group's entries in PopTorch's flat backend dict (see Options.toDict)."""
        entries = {}
        for option, value in self._items():
            entries.update(option.to_flat(value))
        return entries

    def _spec_fields(self) -> dict:
        """The RunSpec fields this group's options fill, as their declarations map them."""
        return {o.spec: o.to_spec(v) for o, v in self._items() if o.spec is not None}

    def _freeze(self) -> None:
        object.__setattr__(self, "_frozen", True)

    def __setstate__(self, state: dict) -> None:
        """A group as PoplarExecutor.save pickled it: its values in `_values` by declaration
        name. Older files hold them as attributes by declaration name, or in `_values` by
        PopTorch's names (and Options' groups in `_groups`, its strategy in `_strategy`); an
        option added since takes its default."""
        state = dict(state)
        by_key = {o.key: o.name for o in declared(type(self))}
        names = {o.name for o in declared(type(self))}
        values = {by_key.get(k, k): v for k, v in state.pop("_values", {}).items()}
        values.update({n: state.pop(n) for n in list(state) if n in names})
        state.update(state.pop("_groups", {}))
        if "_strategy" in state:
            values["execution_strategy"] = state.pop("_strategy")
        for option in declared(type(self)):
            if not option.optional and option.name not in values:
                values[option.name] = copy.deepcopy(option.default)
        self.__dict__.update(state, _values=values)

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
