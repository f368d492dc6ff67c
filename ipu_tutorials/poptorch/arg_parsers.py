"""Custom argument parsers: how a model's inputs and outputs of your own types hold tensors."""
from __future__ import annotations

from torch.utils import _pytree as pytree


class ICustomArgParser:
    """Tells PopTorch which tensors an object of your type holds and how to rebuild it.

    Subclass it, define both methods, and register an instance with `registerCustomArgParser`.
    """

    def yieldTensors(self, struct):  # noqa: N802 (PopTorch's name)
        """Yield the tensors `struct` holds, in a fixed order."""
        raise NotImplementedError("ICustomArgParser.yieldTensors must be defined by a subclass")

    def reconstruct(self, original_structure, tensor_iterator):
        """An object like `original_structure` holding the tensors `tensor_iterator` yields."""
        raise NotImplementedError("ICustomArgParser.reconstruct must be defined by a subclass")


class _Original:
    """The object a parser flattened, kept to rebuild it. Two of one type count as the same
    structure, so a compiled model accepts a new object of the type it was compiled with."""

    def __init__(self, value):
        self.value = value

    def __eq__(self, other) -> bool:
        return isinstance(other, _Original) and type(other.value) is type(self.value)

    def __hash__(self) -> int:
        return hash(type(self.value))


def registerCustomArgParser(arg_data_type: type, arg_parser: ICustomArgParser  # noqa: N802
                            ) -> None:
    """Let wrapped models take and return objects of `arg_data_type`, read through
    `arg_parser`.

    Raises:
        TypeError: `arg_data_type` is not a class or `arg_parser` is not an ICustomArgParser.
    """
    arg_type, parser = arg_data_type, arg_parser
    if not isinstance(arg_type, type):
        raise TypeError(f"registerCustomArgParser: the first argument is the class to parse, "
                        f"got {type(arg_type).__name__}")
    if not isinstance(parser, ICustomArgParser):
        raise TypeError(f"registerCustomArgParser: the parser must be an ICustomArgParser "
                        f"instance, got {type(parser).__name__}")
    if arg_type in pytree.SUPPORTED_NODES:
        pytree._deregister_pytree_node(arg_type)

    def flatten(value):
        return list(parser.yieldTensors(value)), _Original(value)

    def unflatten(tensors, original):
        return parser.reconstruct(original.value, iter(tensors))

    pytree.register_pytree_node(arg_type, flatten, unflatten)
