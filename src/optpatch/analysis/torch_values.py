"""What a value in a PyTorch program is, as far as one file can tell.

Rules ask two things here. Which call is a real torch factory, by qualified
name (`factory_name`). And what an expression is: a device, a dtype, a
tensor, a memory format, an integer (a device index) or unknown
(`classify`), from literals (`"cuda:0"`, `torch.float16`, `int`),
`torch.device(...)`, `x.device` / `x.dtype`, names bound in the enclosing
scopes (every binding must agree: the analysis is flow-insensitive, which is
sound for a name that can only ever hold one kind of value) and parameter
annotations. A value that only its name suggests (a parameter `device`
without annotation, `get_accelerator().device_name()`) is reported with
`proven=False`: good enough for a fix that a validation run must confirm,
never for a safe one.

`parse_move` reads the arguments of `t.to(...)` and `t.cuda(...)` with the
overload rules of `Tensor.to`: a device, an optional dtype, `non_blocking`
and `copy`; or a dtype; or another tensor; plus `memory_format`.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import Assignment, BuiltinAssignment

from optpatch.python_frontend import PythonModule, dotted_name
from optpatch.model import KeepCategory
from optpatch.analysis.torch_api import (
    DEVICE_CALLS,
    DEVICE_TYPES,
    DTYPE_CALLS,
    DTYPES,
    FACTORIES,
    INDEX_CALLS,
    MEMORY_FORMATS,
    PYTHON_SCALAR_DTYPES,
    keyword_arg,
    string_value,
)

# How deep name bindings are followed (`a = b`, `b = torch.device(...)`).
MAX_DEPTH = 4
# Names that say "a device" without proving it: device, dev, target_device, device_name, devices[i].
_DEVICE_LIKE = re.compile(r"(^|_)(device|dev|devices|device_name)$", re.IGNORECASE)
# Names that say "a dtype": dtype, compute_dtype, torch_dtype.
_DTYPE_LIKE = re.compile(r"(^|_)dtype$", re.IGNORECASE)
# Names that say "a device index": rank, local_rank, gpu, gpu_id, device_id, cuda_index.
_INDEX_LIKE = re.compile(r"(^|_)(rank|gpu|gpu_id|gpu_index|device_id|device_index|cuda_id|cuda_index)$", re.IGNORECASE)
_INTEGER_METHODS = frozenset({"numel", "nelement", "dim", "ndimension", "get_device", "element_size"})
_INTEGER_BUILTINS = frozenset({"builtins.len", "builtins.int", "builtins.abs", "builtins.min", "builtins.max"})
_INTEGER_OPERATORS = (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Modulo, cst.LeftShift, cst.RightShift)


class Kind(enum.StrEnum):
    DEVICE = "device"
    DTYPE = "dtype"
    TENSOR = "tensor"
    MEMORY_FORMAT = "memory format"
    INTEGER = "integer"  # in `.to(i)` / `.cuda(i)` / `device=i`: a device index
    NONE = "None"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Value:
    """What an expression is, and the evidence for it (printed in proofs)."""

    kind: Kind
    evidence: str
    proven: bool = True  # False: only a name suggests the kind
    dtype: str | None = None  # `torch.float16` when a DTYPE is known exactly
    device_type: str | None = None  # `cuda`, `cpu`, ... when a DEVICE's type is known

    @property
    def is_device(self) -> bool:
        """A device as `Tensor.to` and `device=` understand it: a device, a string, an index."""
        return self.kind in (Kind.DEVICE, Kind.INTEGER)


UNKNOWN = Value(Kind.UNKNOWN, "nothing in this file says what it is", proven=False)


# -- factories ------------------------------------------------------------------------------------


def factory_name(module: PythonModule, call: cst.Call) -> str | None:
    """`torch.zeros` etc. when `call` calls a real torch factory (through any import alias), else None.

    `torch.normal` is a factory only in its `normal(mean, std, size)` form:
    with tensor means it takes no `device=`.
    """
    if not isinstance(call.func, (cst.Name, cst.Attribute)):
        return None
    name = module.refers_to(call.func, FACTORIES)
    if name == "torch.normal":
        positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
        if len(positional) < 3 and keyword_arg(call, "size") is None:
            return None
    return name


def torch_callee(module: PythonModule, call: cst.Call) -> str | None:
    """The qualified name of a `torch.*` function that `call` calls, else None."""
    if dotted_name(call.func) is None:
        return None  # `torch.cat(...).flatten()` is a method of a result, not a torch function
    names = module.qualified_names(call.func)
    if len(names) == 1:
        (name,) = names
        if name.startswith("torch.") and module.is_import(_root_name(call.func)):
            return name
    return None


def _root_name(node: cst.BaseExpression) -> cst.BaseExpression:
    while isinstance(node, cst.Attribute):
        node = node.value
    return node


# -- classifying an expression ----------------------------------------------------------------------


def classify(module: PythonModule, node: cst.BaseExpression, depth: int = 0) -> Value:
    """Device, dtype, tensor, memory format, integer, None or unknown, with the evidence."""
    if depth > MAX_DEPTH:
        return UNKNOWN
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        return _string(node)
    if isinstance(node, cst.FormattedString):
        return _formatted_string(node)
    if isinstance(node, cst.Integer):
        return Value(Kind.INTEGER, f"the integer {node.value}")
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) and isinstance(node.expression, cst.Integer):
        return Value(Kind.INTEGER, f"the integer -{node.expression.value}")
    if isinstance(node, cst.NamedExpr):
        return classify(module, node.value, depth + 1)
    if isinstance(node, cst.Name) and node.value == "None":
        return Value(Kind.NONE, "None")
    if isinstance(node, (cst.Name, cst.Attribute)):
        qualified = _qualified_value(module, node)
        if qualified is not None:
            return qualified
    if isinstance(node, cst.Attribute):
        return _attribute(node, module.text(node))
    if isinstance(node, cst.Name):
        return _name(module, node, depth)
    if isinstance(node, cst.Call):
        return _call(module, node, depth)
    if isinstance(node, cst.Subscript):
        return _subscript(module, node, depth)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = classify(module, node.expression, depth + 1)
        return inner if inner.kind is Kind.INTEGER else UNKNOWN
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, _INTEGER_OPERATORS):
        left, right = classify(module, node.left, depth + 1), classify(module, node.right, depth + 1)
        if left.kind is Kind.INTEGER and right.kind is Kind.INTEGER:
            return Value(Kind.INTEGER, "integer arithmetic", proven=left.proven and right.proven)
        return UNKNOWN
    return UNKNOWN


def _string(node: cst.SimpleString | cst.ConcatenatedString) -> Value:
    value = node.evaluated_value if isinstance(node, cst.SimpleString) else _concatenated(node)
    if not isinstance(value, str):
        return UNKNOWN
    match = re.fullmatch(r"([a-z_]+)(:\d+)?", value)
    if match and match.group(1) in DEVICE_TYPES:
        return Value(Kind.DEVICE, f"the device string {value!r}", device_type=match.group(1))
    return Value(Kind.UNKNOWN, f"the string {value!r} names no device", proven=False)


def _concatenated(node: cst.ConcatenatedString) -> str | None:
    parts = [node.left, node.right]
    pieces = []
    for part in parts:
        if isinstance(part, cst.SimpleString) and isinstance(part.evaluated_value, str):
            pieces.append(part.evaluated_value)
        elif isinstance(part, cst.ConcatenatedString) and (inner := _concatenated(part)) is not None:
            pieces.append(inner)
        else:
            return None
    return "".join(pieces)


def _formatted_string(node: cst.FormattedString) -> Value:
    # `.to()` and `device=` both parse any string as a device, so an f-string
    # means the same thing in either place (or fails in both).
    leading = node.parts[0] if node.parts else None
    device_type = None
    if isinstance(leading, cst.FormattedStringText):
        head = leading.value.split(":", 1)[0]
        device_type = head if head in DEVICE_TYPES else None
    return Value(Kind.DEVICE, "an f-string, which `.to()` and `device=` both parse as a device", device_type=device_type)


def _qualified_value(module: PythonModule, node: cst.Name | cst.Attribute) -> Value | None:
    """torch dtypes and memory formats, and Python's `int`/`float`/`bool`/`complex` used as dtypes."""
    names = module.qualified_names(node)
    if len(names) != 1:
        return None
    (name,) = names
    if name in DTYPES:
        return Value(Kind.DTYPE, f"`{name}`", dtype=name)
    if name in PYTHON_SCALAR_DTYPES and _is_builtin(module, node):
        return Value(Kind.DTYPE, f"Python's `{name.split('.')[1]}`, which `.to()` reads as {PYTHON_SCALAR_DTYPES[name]}",
                     dtype=PYTHON_SCALAR_DTYPES[name])
    if name in MEMORY_FORMATS:
        return Value(Kind.MEMORY_FORMAT, f"`{name}`")
    return None


def _is_builtin(module: PythonModule, node: cst.CSTNode) -> bool:
    if not isinstance(node, cst.Name):
        return False
    bindings = module.bindings(node)
    return bool(bindings) and all(isinstance(b, BuiltinAssignment) for b in bindings)


def _attribute(node: cst.Attribute, spelled: str) -> Value:
    attribute = node.attr.value
    if attribute == "device":
        return Value(Kind.DEVICE, f"`{spelled}`")
    if attribute == "dtype":
        return Value(Kind.DTYPE, f"`{spelled}`")
    if attribute == "ndim":
        return Value(Kind.INTEGER, f"`{spelled}`")
    return _by_name(attribute, f"`{spelled}`")


def _by_name(name: str, spelled: str) -> Value:
    """What a name suggests, unproven: `device` -> a device, `local_rank` -> an index."""
    if _DEVICE_LIKE.search(name):
        return Value(Kind.DEVICE, f"{spelled} is named like a device, but nothing here binds it to one", proven=False)
    if _DTYPE_LIKE.search(name):
        return Value(Kind.DTYPE, f"{spelled} is named like a dtype", proven=False)
    if _INDEX_LIKE.search(name):
        return Value(Kind.INTEGER, f"{spelled} is named like a device index, but nothing here binds it to an integer",
                     proven=False)
    return Value(Kind.UNKNOWN, f"nothing in this file says what {spelled} is", proven=False)


def _name(module: PythonModule, node: cst.Name, depth: int) -> Value:
    bindings = module.bindings(node)
    if not bindings:
        return _by_name(node.value, f"`{node.value}`")
    values = [_binding(module, node.value, binding, depth) for binding in bindings]
    first = values[0]
    if all(v.kind is first.kind for v in values):
        proven = all(v.proven for v in values)
        evidence = "; ".join(dict.fromkeys(v.evidence for v in values))
        dtypes = {v.dtype for v in values}
        device_types = {v.device_type for v in values}
        return Value(
            first.kind, evidence, proven=proven,
            dtype=dtypes.pop() if len(dtypes) == 1 else None,
            device_type=device_types.pop() if len(device_types) == 1 else None,
        )
    kinds = ", ".join(sorted({v.kind.value for v in values}))
    return Value(Kind.UNKNOWN, f"`{node.value}` is bound to different kinds of value ({kinds})", proven=False)


def _binding(module: PythonModule, name: str, binding, depth: int) -> Value:
    """What one binding of `name` gives it."""
    if not isinstance(binding, Assignment):
        return _by_name(name, f"`{name}`")
    node = binding.node
    if isinstance(node, cst.Param):
        return _parameter(module, node)
    if isinstance(node, cst.Name):
        value = _assigned_value(module, node)
        found = classify(module, value, depth + 1) if value is not None else UNKNOWN
        if found.kind is not Kind.UNKNOWN:
            line = module.start(node)[0]
            return Value(found.kind, f"`{name}` = {found.evidence} (L{line})", found.proven, found.dtype, found.device_type)
    return _by_name(name, f"`{name}`")


def _assigned_value(module: PythonModule, target: cst.Name) -> cst.BaseExpression | None:
    """The right-hand side of `target = value` / `target: T = value` / `(target := value)`; None otherwise.

    `a, b = x, y` gives each name its own element.
    """
    parent = module.parent(target)
    if isinstance(parent, cst.Element):
        return _unpacked_value(module, parent)
    if isinstance(parent, cst.AssignTarget):
        statement = module.parent(parent)
        if isinstance(statement, cst.Assign) and len(statement.targets) == 1:
            return statement.value
    if isinstance(parent, cst.AnnAssign) and parent.target is target:
        return parent.value
    if isinstance(parent, cst.NamedExpr) and parent.target is target:
        return parent.value
    return None


def _unpacked_value(module: PythonModule, element: cst.Element) -> cst.BaseExpression | None:
    targets = module.parent(element)
    assign_target = module.parent(targets) if targets is not None else None
    statement = module.parent(assign_target) if assign_target is not None else None
    if not (isinstance(targets, (cst.Tuple, cst.List)) and isinstance(assign_target, cst.AssignTarget)
            and isinstance(statement, cst.Assign) and len(statement.targets) == 1
            and isinstance(statement.value, (cst.Tuple, cst.List))):
        return None
    values = statement.value.elements
    if len(values) != len(targets.elements) or any(isinstance(e, cst.StarredElement) for e in (*values, *targets.elements)):
        return None
    index = next(i for i, e in enumerate(targets.elements) if e is element)
    return values[index].value


def _parameter(module: PythonModule, param: cst.Param) -> Value:
    name = param.name.value
    if param.annotation is None:
        return _by_name(name, f"the parameter `{name}`")
    found = _annotation(module, param.annotation.annotation)
    if found is None:
        return _by_name(name, f"the parameter `{name}`")
    return Value(found.kind, f"the parameter `{name}` is annotated {found.evidence}", found.proven, found.dtype,
                 found.device_type)


def _annotation(module: PythonModule, annotation: cst.BaseExpression) -> Value | None:
    """`torch.device`, `str`, `int`, `torch.dtype`, `torch.Tensor`, and their `Optional`/`Union`/`|` forms."""
    members = [m for m in _union_members(module, annotation) if not _is_none(m)]
    if not members:
        return None
    kinds = set()
    for member in members:
        names = module.qualified_names(member)
        if names == {"torch.device"}:
            kinds.add(Kind.DEVICE)
        elif names == {"builtins.str"}:
            kinds.add(Kind.DEVICE)  # `.to(s)` and `device=s` both parse a string as a device
        elif names == {"builtins.int"}:
            kinds.add(Kind.INTEGER)
        elif names == {"torch.dtype"}:
            kinds.add(Kind.DTYPE)
        elif names == {"torch.Tensor"}:
            kinds.add(Kind.TENSOR)
        else:
            return None
    if kinds <= {Kind.DEVICE, Kind.INTEGER}:
        kind = Kind.DEVICE if Kind.DEVICE in kinds else Kind.INTEGER
        return Value(kind, f"`{module.text(annotation)}`")
    if len(kinds) == 1:
        return Value(kinds.pop(), f"`{module.text(annotation)}`")
    return None


def _union_members(module: PythonModule, annotation: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(annotation, cst.BinaryOperation) and isinstance(annotation.operator, cst.BitOr):
        return _union_members(module, annotation.left) + _union_members(module, annotation.right)
    if isinstance(annotation, cst.Subscript) and module.qualified_names(annotation.value) & {"typing.Optional", "typing.Union"}:
        members = []
        for element in annotation.slice:
            if isinstance(element.slice, cst.Index):
                members += _union_members(module, element.slice.value)
        return members
    return [annotation]


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _call(module: PythonModule, call: cst.Call, depth: int) -> Value:
    names = module.qualified_names(call.func)
    callee = names.pop() if len(names) == 1 else ""
    spelled = f"`{module.text(call.func)}(...)`"
    if callee in DEVICE_CALLS:
        device_type = None
        if call.args and call.args[0].keyword is None:
            first = string_value(call.args[0].value)
            device_type = first.split(":", 1)[0] if first and first.split(":", 1)[0] in DEVICE_TYPES else None
        return Value(Kind.DEVICE, spelled, device_type=device_type)
    if callee in INDEX_CALLS:
        return Value(Kind.INTEGER, f"{spelled}, a device index")
    if callee in DTYPE_CALLS:
        return Value(Kind.DTYPE, spelled)
    if callee in _INTEGER_BUILTINS and _is_builtin(module, _root_name(call.func)):
        if callee == "builtins.len" or callee == "builtins.int":
            return Value(Kind.INTEGER, spelled)
        arguments = [classify(module, arg.value, depth + 1) for arg in call.args]
        if arguments and all(a.kind is Kind.INTEGER and a.proven for a in arguments):
            return Value(Kind.INTEGER, spelled)
        return UNKNOWN
    if isinstance(call.func, cst.Attribute):
        method = call.func.attr.value
        if method in _INTEGER_METHODS or (method == "size" and len(call.args) == 1):
            return Value(Kind.INTEGER, spelled)
        if callee.startswith("torch.") and module.is_import(_root_name(call.func)):
            return Value(Kind.TENSOR, f"{spelled} returns a tensor")
        return _by_name(method, spelled)
    if callee.startswith("torch.") and callee not in DEVICE_CALLS:
        return Value(Kind.TENSOR, f"{spelled} returns a tensor")
    return UNKNOWN


def _subscript(module: PythonModule, node: cst.Subscript, depth: int) -> Value:
    """`x.shape[i]`, `x.size()[i]` are integers; `devices[i]` is named like a device."""
    value = node.value
    if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        if isinstance(value, cst.Attribute) and value.attr.value == "shape":
            return Value(Kind.INTEGER, f"`{module.text(node)}`")
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "size" and not value.args:
            return Value(Kind.INTEGER, f"`{module.text(node)}`")
    key = string_value(node.slice[0].slice.value) if isinstance(node.slice[0].slice, cst.Index) else None
    spelled = key or (dotted_name(value) or "").rsplit(".", 1)[-1]
    found = _by_name(spelled, f"`{module.text(node)}`")
    return found if found.kind is Kind.DEVICE else UNKNOWN


# -- where a tensor lives -----------------------------------------------------------------------------


def on_cpu(module: PythonModule, node: cst.BaseExpression, depth: int = 0) -> str | None:
    """Evidence that `node` is a tensor on the CPU, or None when that cannot be shown.

    A factory without `device=` (the default device, the CPU unless the
    program calls `torch.set_default_device`), `x.cpu()`,
    `torch.from_numpy(a)`, or a name every binding of which is one of these.
    """
    if depth > MAX_DEPTH:
        return None
    if isinstance(node, cst.Call):
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "cpu" and not node.args:
            return f"`{module.text(node)}` is on the CPU"
        name = factory_name(module, node) or torch_callee(module, node)
        if name == "torch.from_numpy":
            return f"`{module.text(node)}` shares a NumPy array's host memory"
        if name in FACTORIES and keyword_arg(node, "device") is None and not _like_template(name):
            return f"`{module.text(node)}` has no `device=`: the default device"
        return None
    if isinstance(node, cst.Name):
        bindings = module.bindings(node)
        if not bindings:
            return None
        evidence = []
        for binding in bindings:
            if not (isinstance(binding, Assignment) and isinstance(binding.node, cst.Name)):
                return None
            value = _assigned_value(module, binding.node)
            found = on_cpu(module, value, depth + 1) if value is not None else None
            if found is None:
                return None
            evidence.append(f"`{node.value}` = {found} (L{module.start(binding.node)[0]})")
        return "; ".join(evidence)
    return None


def _like_template(name: str) -> bool:
    return name.endswith("_like")


# -- reading .to(...) and .cuda(...) ------------------------------------------------------------------


@dataclass(frozen=True)
class Move:
    """What `t.to(...)` or `t.cuda(...)` asks for.

    `device` is None for `.cuda()` (the current CUDA device). `blocker` says
    why the call is not a pure move to a device (a dtype-only conversion,
    another tensor, a memory format, an argument it cannot read); a move
    with a blocker is never rewritten.
    """

    method: str
    device: cst.BaseExpression | None = None
    device_value: Value | None = None
    dtype: cst.BaseExpression | None = None
    dtype_value: Value | None = None
    blocker: str | None = None
    blocker_category: KeepCategory = KeepCategory.NOT_A_DEVICE  # what kind of blocker, when there is one


_MOVE_KEYWORDS = {"to": ("device", "dtype", "non_blocking", "copy"), "cuda": ("device", "non_blocking")}


def move_method(call: cst.Call) -> str | None:
    """"to" or "cuda" when `call` is `<receiver>.to(...)` / `<receiver>.cuda(...)`."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in ("to", "cuda"):
        return func.attr.value
    return None


def parse_move(module: PythonModule, call: cst.Call) -> Move:
    method = move_method(call)
    assert method is not None
    if any(arg.star for arg in call.args):
        return Move(method, blocker="`*args` / `**kwargs`: the arguments cannot be read", blocker_category=KeepCategory.OTHER)
    unknown = [arg.keyword.value for arg in call.args if arg.keyword and arg.keyword.value not in _MOVE_KEYWORDS[method]]
    if "memory_format" in unknown:
        return Move(method, blocker="`memory_format=` converts the layout, which `device=` cannot express")
    if unknown:
        return Move(method, blocker=f"`{unknown[0]}=` is not an argument this rule can carry over",
                    blocker_category=KeepCategory.CANNOT_SPELL)
    positional = [arg.value for arg in call.args if arg.keyword is None]
    keywords = {arg.keyword.value: arg.value for arg in call.args if arg.keyword is not None}
    if method == "cuda":
        return _parse_cuda(module, positional, keywords)
    return _parse_to(module, positional, keywords)


def _parse_cuda(module: PythonModule, positional, keywords) -> Move:
    if len(positional) > 2:
        return Move("cuda", blocker="more positional arguments than `Tensor.cuda` takes", blocker_category=KeepCategory.OTHER)
    device = positional[0] if positional else keywords.get("device")
    value = classify(module, device) if device is not None else None
    return Move("cuda", device=device, device_value=value)


def _parse_to(module: PythonModule, positional, keywords) -> Move:
    if len(positional) > 4:
        return Move("to", blocker="more positional arguments than `Tensor.to` takes", blocker_category=KeepCategory.OTHER)
    if positional:
        first = classify(module, positional[0])
        if first.kind is Kind.DTYPE:
            return Move("to", blocker=f"`.to({module.text(positional[0])})` converts the dtype ({first.evidence}), not the device")
        if first.kind is Kind.TENSOR:
            return Move("to", blocker=f"`.to({module.text(positional[0])})` takes device and dtype from another tensor ({first.evidence})")
        if first.kind is Kind.MEMORY_FORMAT:
            return Move("to", blocker=f"`{module.text(positional[0])}` is a memory format")
        if "device" in keywords:
            return Move("to", blocker="a positional argument beside `device=`: not a form `Tensor.to` accepts",
                        blocker_category=KeepCategory.OTHER)
        if not (first.is_device or first.kind is Kind.NONE):
            return Move("to", blocker=f"`.to({module.text(positional[0])})`: {first.evidence}")
        dtype = positional[1] if len(positional) > 1 else keywords.get("dtype")
        if len(positional) > 1 and "dtype" in keywords:
            return Move("to", blocker="`dtype` given twice", blocker_category=KeepCategory.OTHER)
        return Move("to", positional[0], first, dtype, classify(module, dtype) if dtype is not None else None)
    device = keywords.get("device")
    dtype = keywords.get("dtype")
    if device is None:
        return Move("to", blocker="no device: only the dtype or flags change")
    value = classify(module, device)
    if not (value.is_device or value.kind is Kind.NONE):
        return Move("to", blocker=f"`device={module.text(device)}`: {value.evidence}")
    return Move("to", device, value, dtype, classify(module, dtype) if dtype is not None else None)
