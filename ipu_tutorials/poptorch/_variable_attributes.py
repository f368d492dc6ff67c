"""Optimizer attributes: which may change after compile (variable) and which are compiled in."""
from __future__ import annotations

import inspect


class VariableAttributes:
    """Which attributes of an optimizer may change after compile (through setOptimizer).

    The others are compiled in as constants. By default the attributes passed to the
    constructor are variable, and lr always is.
    """

    def __init__(self, variable_attributes: list[str], allowed_attributes: list[str]):
        # PopTorch's private names: some user code (and PopTorch's tests) set them directly
        self._variable_attributes = list(variable_attributes)
        self._allowed_attributes = list(allowed_attributes)

    def isConstant(self, attr: str) -> bool:
        """Whether `attr` (such as "momentum") is compiled in, so that `setOptimizer` may not
        change it."""
        return attr not in self._variable_attributes

    def markAsConstant(self, attr: str) -> None:
        """Compile `attr` in as a constant: a later `setOptimizer` that changes it raises.

        Raises:
            AssertionError: for an attribute the optimizer does not have (PopTorch's type).
        """
        self._check(attr)
        self._variable_attributes = [a for a in self._variable_attributes if a != attr]

    def markAsVariable(self, attr: str) -> None:
        """Let `setOptimizer` change `attr` after compile.

        Raises:
            AssertionError: for an attribute the optimizer does not have (PopTorch's type).
        """
        self._check(attr)
        self._variable_attributes.append(attr)

    def _check(self, attr: str) -> None:
        assert attr in self._allowed_attributes, (
            f"Unknown attribute {attr}, allowed values: {self._allowed_attributes}")


def explicit_arguments(cls, args: tuple, kwargs: dict) -> list[str]:
    """The constructor arguments given a value other than None (params excluded)."""
    signature = inspect.signature(cls.__init__)
    bound = signature.bind_partial(None, *args, **kwargs).arguments
    names = []
    for name, value in list(bound.items())[1:]:
        kind = signature.parameters[name].kind
        if kind == inspect.Parameter.VAR_KEYWORD:
            names += [k for k, v in value.items() if v is not None]
        elif name != "params" and value is not None and kind != inspect.Parameter.VAR_POSITIONAL:
            names.append(name)
    return names


def allowed_attributes(cls, module: str) -> list[str]:
    """Every named constructor argument of the class and its poptorch.optim bases (a subclass
    taking *args, **kwargs, or AdamW passing loss_scaling on to Adam, still allows them)."""
    allowed = []
    for klass in cls.__mro__:
        if klass.__module__ == module and "__init__" in vars(klass) or klass is cls:
            for name, param in inspect.signature(klass.__init__).parameters.items():
                if name not in ("self", "params", *allowed) and param.kind not in (
                        inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
                    allowed.append(name)
    return allowed
