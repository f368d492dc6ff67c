"""What the source of one function or class says, read with `ast`: parameters, returns,
raises, stored attributes. Used by manifest.py (the real projects) and surface.py (the facades).
"""
from __future__ import annotations

import ast
import enum
import inspect
import textwrap

# Methods whose names start with "_" but are part of what a class offers.
DUNDERS = {"__init__", "__call__", "__enter__", "__exit__", "__iter__", "__next__", "__len__",
           "__getitem__"}


# --- what one function does -------------------------------------------------------------

def own_nodes(body: list[ast.stmt]):
    """Every node of a body, not descending into nested functions, lambdas or classes."""
    nested = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
    stack = [node for node in reversed(body) if not isinstance(node, nested)]
    while stack:
        node = stack.pop()
        yield node
        stack += [child for child in ast.iter_child_nodes(node) if not isinstance(child, nested)]


def terminates(body: list[ast.stmt]) -> bool:
    """Whether every path through `body` ends in a return or a raise."""
    if not body:
        return False
    last = body[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    if isinstance(last, ast.Assert):
        return isinstance(last.test, ast.Constant) and not last.test.value
    if isinstance(last, ast.If):
        return terminates(last.body) and terminates(last.orelse)
    if isinstance(last, (ast.With, ast.AsyncWith)):
        return terminates(last.body)
    if isinstance(last, ast.Try):
        handled = all(terminates(h.body) for h in last.handlers)
        return terminates(last.finalbody) or (
            (terminates(last.orelse) if last.orelse else terminates(last.body)) and handled)
    if isinstance(last, ast.While):
        loops_forever = isinstance(last.test, ast.Constant) and last.test.value
        return loops_forever and not any(isinstance(n, ast.Break) for n in own_nodes(last.body))
    return False


def is_abstract(fn: ast.FunctionDef) -> bool:
    return any(decorator_name(d) in ("abstractmethod", "abc.abstractmethod")
               for d in fn.decorator_list)


def returns(fn: ast.FunctionDef) -> str:
    """none, self, value, generator or abstract: what a call gives back, from the source."""
    if is_abstract(fn):
        return "abstract"
    kinds = set()
    for node in own_nodes(fn.body):
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return "generator"
        if isinstance(node, ast.Return):
            value = node.value
            if value is None or (isinstance(value, ast.Constant) and value.value is None):
                kinds.add("none")
            elif isinstance(value, ast.Name) and value.id == "self":
                kinds.add("self")
            else:
                kinds.add("value")
    if not terminates(fn.body):
        kinds.add("none")
    return "|".join(sorted(kinds))


def exception_of(node: ast.AST) -> str | None:
    """The exception class an `assert` or `raise` statement raises, as source text."""
    if isinstance(node, ast.Assert):
        return "AssertionError"
    if isinstance(node, ast.Raise) and node.exc is not None:
        exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        return ast.unparse(exc)
    return None


def message_of(node: ast.AST) -> str:
    if isinstance(node, ast.Assert):
        return ast.unparse(node.msg) if node.msg is not None else ""
    if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
        return ast.unparse(node.exc.args[0])
    return ""


def raises(nodes, factories: dict[str, str]) -> list[dict]:
    """Each `assert` and `raise`: its exception class, line, message (and an assert's test)."""
    found = []
    for node in nodes:
        exception = exception_of(node)
        if exception:
            entry = {"exception": factories.get(exception, exception), "line": node.lineno,
                     "message": message_of(node)[:240]}
            if isinstance(node, ast.Assert):
                entry["condition"] = ast.unparse(node.test)[:160]
            found.append(entry)
    return found


def parameters(args: ast.arguments, drop_first: bool) -> list[dict]:
    """Each parameter: name, kind (inspect's names), default as source text, if any."""
    positional = [*args.posonlyargs, *args.args]
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    params = []
    for index, (arg, default) in enumerate(zip(positional, defaults)):
        kind = "POSITIONAL_ONLY" if index < len(args.posonlyargs) else "POSITIONAL_OR_KEYWORD"
        params.append(param(arg, kind, default))
    if args.vararg:
        params.append(param(args.vararg, "VAR_POSITIONAL", None))
    for arg, default in zip(args.kwonlyargs, args.kw_defaults):
        params.append(param(arg, "KEYWORD_ONLY", default))
    if args.kwarg:
        params.append(param(args.kwarg, "VAR_KEYWORD", None))
    return params[1:] if drop_first and positional else params


def param(arg: ast.arg, kind: str, default: ast.expr | None) -> dict:
    entry = {"name": arg.arg, "kind": kind}
    if default is not None:
        entry["default"] = ast.unparse(default)
    return entry


def decorator_name(node: ast.expr) -> str:
    return ast.unparse(node.func if isinstance(node, ast.Call) else node)


def function(fn: ast.FunctionDef, file: str, in_class: bool, factories: dict) -> dict:
    decorators = [decorator_name(d) for d in fn.decorator_list]
    kind = "function"
    if in_class:
        kind = ("property" if "property" in decorators else
                "staticmethod" if "staticmethod" in decorators else
                "classmethod" if "classmethod" in decorators else "method")
    entry = {"kind": kind, "at": f"{file}:{fn.lineno}",
             "params": parameters(fn.args, drop_first=kind in ("method", "classmethod",
                                                               "property")),
             "returns": "value" if kind == "property" else returns(fn)}
    found = raises(own_nodes(fn.body), factories)
    if found:
        entry["raises"] = found
    return entry


# --- what one class holds -----------------------------------------------------------------

def value_type(expr: ast.expr, annotations: dict[str, str], enums: dict[str, str]) -> str | None:
    """The type a stored value has, where its source shows it."""
    if isinstance(expr, ast.Constant):
        return "None" if expr.value is None else type(expr.value).__name__
    if isinstance(expr, (ast.Dict, ast.DictComp)):
        return "dict"
    if isinstance(expr, (ast.List, ast.ListComp)):
        return "list"
    if isinstance(expr, ast.Tuple):
        return "tuple"
    if isinstance(expr, ast.Attribute) and expr.attr == "value":
        # an enum member's value: SomeEnum.Member.value
        owner = expr.value.value if isinstance(expr.value, ast.Attribute) else None
        name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
        return enums.get(name)
    if isinstance(expr, ast.Attribute):
        # an enum member itself: enums.SomeEnum.Member
        owner = (expr.value.attr if isinstance(expr.value, ast.Attribute) else
                 getattr(expr.value, "id", ""))
        if owner in enums:
            return owner
    if isinstance(expr, ast.Name) and expr.id in annotations:
        return annotations[expr.id]
    if isinstance(expr, ast.Call):
        return ast.unparse(expr.func)
    return None


def enum_value_types(trees: dict[str, ast.Module]) -> dict[str, str]:
    """Each enum class of the project: the type its members' `.value` has."""
    types = {}
    for tree in trees.values():
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            bases = {ast.unparse(b) for b in node.bases}
            if bases & {"enum.IntEnum", "IntEnum"}:
                types[node.name] = "int"
            elif bases & {"enum.Enum", "Enum"}:
                values = [s.value for s in node.body if isinstance(s, ast.Assign)]
                kinds = {type(v.value).__name__ for v in values if isinstance(v, ast.Constant)}
                types[node.name] = kinds.pop() if len(kinds) == 1 else "object"
    return types


def stored_attributes(cls: ast.ClassDef, enums: dict[str, str]) -> tuple[dict, dict]:
    """(instance attributes set as `self.x = ...`, options stored through OptionsDict).

    PopTorch's OptionsDict keeps its options in a dict and gives them back as attributes:
    `super().__init__(output_mode=...)`, `self.set(...)` and `self.createOrSet(...)` make them.
    """
    attributes, options = {}, {}
    for method in (n for n in cls.body if isinstance(n, ast.FunctionDef)):
        annotations = {a.arg: ast.unparse(a.annotation) for a in
                       [*method.args.args, *method.args.kwonlyargs] if a.annotation}
        for node in own_nodes(method.body):
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                            and target.value.id == "self" and not target.attr.startswith("_")
                            and node.value is not None):
                        merge(attributes, target.attr,
                              stored(node.value, annotations, enums, method.name))
            if isinstance(node, ast.Call) and ast.unparse(node.func) in (
                    "super().__init__", "self.set", "self.createOrSet"):
                for keyword in node.keywords:
                    if keyword.arg:
                        merge(options, keyword.arg,
                              stored(keyword.value, annotations, enums, method.name))
    return attributes, options


def merge(found: dict, name: str, entry: dict) -> None:
    """Keep the first place a name is stored, and every type it is stored with."""
    if name not in found:
        found[name] = entry
        return
    kinds = [k for k in (found[name].get("type"), entry.get("type")) if k]
    if kinds:
        found[name]["type"] = "|".join(dict.fromkeys("|".join(kinds).split("|")))


def stored(expr: ast.expr, annotations: dict, enums: dict, method: str) -> dict:
    entry = {"value": ast.unparse(expr)[:160], "set_in": method}
    kind = value_type(expr, annotations, enums)
    if kind:
        entry["type"] = kind
    return entry


def class_entry(cls: ast.ClassDef, file: str, enums: dict[str, str], factories: dict) -> dict:
    entry = {"kind": "class", "at": f"{file}:{cls.lineno}",
             "bases": [ast.unparse(b) for b in cls.bases], "members": {}}
    constants = {}
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name.startswith("_") and node.name not in DUNDERS:
                continue
            decorators = [decorator_name(d) for d in node.decorator_list]
            if any(d.endswith((".setter", ".deleter")) for d in decorators):
                entry["members"][node.name]["settable"] = True
                continue
            entry["members"][node.name] = function(node, file, True, factories)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and not target.id.startswith("_"):
                    value = node.value
                    constants[target.id] = {"value": ast.unparse(value)[:160]} if value else {}
                    kind = value_type(value, {}, enums) if value is not None else None
                    if kind:
                        constants[target.id]["type"] = kind
    if constants:
        entry["class_attributes"] = constants
    attributes, options = stored_attributes(cls, enums)
    if attributes:
        entry["attributes"] = attributes
    if options:
        entry["options"] = options
    return entry


# --- the same, read from a facade's live function ----------------------------------------

def function_node(func) -> ast.FunctionDef | None:
    func = inspect.unwrap(getattr(func, "__func__", func))
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError):
        return None
    node = tree.body[0]
    return node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def facade_returns(cls: type | None, func, depth: int = 0) -> str:
    """none / self / value, read from the facade's source as the manifest reads PopTorch's;
    `return self._set(...)` counts as self when that method returns self."""
    node = function_node(func)
    if node is None:
        return "unknown"
    kinds = set(returns(node).split("|"))
    if "value" in kinds and cls is not None and depth < 4:
        values = [n.value for n in own_nodes(node.body)
                  if isinstance(n, ast.Return) and n.value is not None]
        if values and all(_returns_self(cls, v, depth) for v in values
                          if not (isinstance(v, ast.Constant) and v.value is None)):
            kinds.discard("value")
            kinds.add("self")
    return "|".join(sorted(kinds))


def _returns_self(cls: type, value: ast.expr, depth: int) -> bool:
    if isinstance(value, ast.Name) and value.id == "self":
        return True
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        owner = value.func.value
        calls_self = isinstance(owner, ast.Name) and owner.id == "self"
        calls_super = isinstance(owner, ast.Call) and ast.unparse(owner.func) == "super"
        if calls_self or calls_super:
            method = getattr(cls, value.func.attr, None)
            return method is not None and facade_returns(cls, method, depth + 1) == "self"
    return False


def shown_default(value) -> str:
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    return repr(value)


def normal_default(text: str) -> str:
    """A default as written in the real source, the way shown_default writes it."""
    for prefix in ("poptorch.enums.", "enums.", "poptorch."):
        if text.startswith(prefix):
            text = text[len(prefix):]
    try:
        return repr(ast.literal_eval(text))
    except (ValueError, SyntaxError):
        return text


def facade_params(func, bound: bool) -> list[dict] | None:
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return None
    params = list(signature.parameters.values())
    if bound and params and params[0].name in ("self", "cls"):
        params = params[1:]
    out = []
    for p in params:
        entry = {"name": p.name, "kind": p.kind.name}
        if p.default is not inspect.Parameter.empty:
            entry["default"] = shown_default(p.default)
        out.append(entry)
    return out
