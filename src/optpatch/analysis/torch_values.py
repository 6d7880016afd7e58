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
import math
import re
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import Assignment, BuiltinAssignment

from optpatch.python_frontend import PythonModule, dotted_name
from optpatch.model import KeepCategory
from optpatch.analysis.torch_api import (
    CAST_METHODS,
    DEVICE_CALLS,
    DEVICE_TYPES,
    DTYPE_CALLS,
    DTYPES,
    FACTORIES,
    INDEX_CALLS,
    LEGACY_TENSOR_TYPES,
    MEMORY_FORMATS,
    PYTHON_SCALAR_DTYPES,
    VIEW_METHODS,
    ZERO_ONE_FACTORIES,
    integer_range,
    is_integer_dtype,
    keyword_arg,
    string_value,
    widens_float,
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
        if name.startswith("torch.") and module.is_import(root_name(call.func)):
            return name
    return None


def root_name(node: cst.BaseExpression) -> cst.BaseExpression:
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
        # Any `.device` is read as a device by its name (a tensor's, a module's, a config's): it proves no device type.
        return Value(Kind.DEVICE, f"`{spelled}`, an attribute named `device`, read as a device by its name "
                                  "(`.to()` and `device=` read whatever it holds the same way); its type is not known")
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
        value = assigned_value(module, node)
        found = classify(module, value, depth + 1) if value is not None else UNKNOWN
        if found.kind is not Kind.UNKNOWN:
            line = module.start(node)[0]
            return Value(found.kind, f"`{name}` = {found.evidence} (L{line})", found.proven, found.dtype, found.device_type)
    return _by_name(name, f"`{name}`")


def assigned_value(module: PythonModule, target: cst.Name) -> cst.BaseExpression | None:
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
    if callee in _INTEGER_BUILTINS and _is_builtin(module, root_name(call.func)):
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
        if callee.startswith("torch.") and module.is_import(root_name(call.func)):
            return Value(Kind.TENSOR, f"{spelled} returns a tensor")
        return _by_name(method, spelled)
    if callee.startswith("torch.") and callee not in DEVICE_CALLS:
        return Value(Kind.TENSOR, f"{spelled} returns a tensor")
    if isinstance(call.func, cst.Name):
        return _returned(module, call.func, depth)
    return UNKNOWN


def _returned(module: PythonModule, name: cst.Name, depth: int) -> Value:
    """What a function of this file returns: its return annotation (read as a parameter's is), or else the one kind
    of value every `return` of its body gives, on a body that cannot end without one (`get_current_device()` whose
    every return is `torch.device(...)`). A decorated, asynchronous or generator function is not followed."""
    function = _function_of(module, name)
    if function is None:
        return UNKNOWN
    spelled, line = f"`{name.value}()`", module.start(function)[0]
    if function.returns is not None:
        found = _annotation(module, function.returns.annotation)
        if found is None:
            return UNKNOWN
        return Value(found.kind, f"{spelled} is annotated to return {found.evidence} (L{line})", found.proven, found.dtype,
                     found.device_type)
    returns = _returns(function)
    if not returns or not _always_returns(function.body.body):
        return UNKNOWN
    values = [classify(module, node.value, depth + 1) for node in returns]
    first = values[0]
    if first.kind not in (Kind.DEVICE, Kind.INTEGER) or any(v.kind is not first.kind for v in values):
        return UNKNOWN
    device_types = {v.device_type for v in values}
    evidence = "; ".join(dict.fromkeys(v.evidence for v in values))
    return Value(first.kind, f"{spelled} (L{line}) returns {first.kind.value}s on every path: {evidence}",
                 all(v.proven for v in values), device_type=device_types.pop() if len(device_types) == 1 else None)


def _function_of(module: PythonModule, name: cst.Name) -> cst.FunctionDef | None:
    """The plain `def` that every binding of `name` is."""
    bindings = module.bindings(name)
    if not bindings or len(bindings) != 1:
        return None
    (binding,) = bindings
    node = binding.node if isinstance(binding, Assignment) else None
    if not isinstance(node, cst.FunctionDef) or node.decorators or node.asynchronous is not None:
        return None
    return node


def _returns(function: cst.FunctionDef) -> list[cst.Return] | None:
    """The function's own `return value`s; None when it yields or returns nothing somewhere."""
    found: list[cst.Return] = []
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, (cst.Yield, cst.Await)) or isinstance(node, cst.Return) and node.value is None:
            return None
        if isinstance(node, cst.Return):
            found.append(node)
        stack.extend(node.children)
    return found


def _always_returns(body) -> bool:
    """The block cannot fall off its end: it ends in `return` or `raise`, or in an `if` all of whose branches do."""
    last = body[-1] if body else None
    if isinstance(last, cst.SimpleStatementLine):
        return any(isinstance(small, (cst.Return, cst.Raise)) for small in last.body)
    if isinstance(last, cst.If):
        orelse = last.orelse
        if orelse is None or not _always_returns(last.body.body):
            return False
        return _always_returns([orelse] if isinstance(orelse, cst.If) else orelse.body.body)
    return False


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
            value = assigned_value(module, binding.node)
            found = on_cpu(module, value, depth + 1) if value is not None else None
            if found is None:
                return None
            evidence.append(f"`{node.value}` = {found} (L{module.start(binding.node)[0]})")
        return "; ".join(evidence)
    return None


def list_data(module: PythonModule, node: cst.BaseExpression, depth: int = 0) -> str | None:
    """Evidence that `node` is a Python list or tuple, else None: what a legacy constructor (`torch.LongTensor(...)`)
    copies as data, where an integer would be a size and a tensor would be shared.

    A list or tuple display, a comprehension, `[v] * n`, `list(...)`, `tuple(...)`, `sorted(...)`, `.tolist()`, a
    parameter annotated `list`/`tuple`, or a name every binding of which is one of these.
    """
    if depth > MAX_DEPTH:
        return None
    if isinstance(node, (cst.List, cst.Tuple)):
        return "a list display"
    if isinstance(node, cst.ListComp):
        return "a list comprehension"
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply) and any(
            isinstance(side, (cst.List, cst.Tuple)) for side in (node.left, node.right)):
        return "a repeated list display"
    if isinstance(node, cst.Call):
        if module.refers_to(node.func, {"builtins.list", "builtins.tuple", "builtins.sorted"}) is not None:
            return f"`{module.text(node.func)}(...)` builds a list"
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "tolist" and not node.args:
            return "`.tolist()` returns a list"
        return None
    if not isinstance(node, cst.Name):
        return None
    bindings = module.bindings(node)
    evidence = []
    for binding in bindings or ():
        target = binding.node if isinstance(binding, Assignment) else None
        if isinstance(target, cst.Param):
            annotation = target.annotation.annotation if target.annotation is not None else None
            base = annotation.value if isinstance(annotation, cst.Subscript) else annotation
            if base is None or not module.qualified_names(base) & {"builtins.list", "builtins.tuple", "typing.List",
                                                                  "typing.Tuple"}:
                return None
            evidence.append(f"the parameter `{node.value}` is annotated `{module.text(annotation)}`")
            continue
        value = assigned_value(module, target) if isinstance(target, cst.Name) else None
        found = list_data(module, value, depth + 1) if value is not None else None
        if found is None:
            return None
        evidence.append(f"`{node.value}` = {found} (L{module.start(target)[0]})")
    return "; ".join(evidence) or None


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


# -- what happens between a factory and its move ------------------------------------------------------


class Step(enum.StrEnum):
    """What one method call of a chain does to its receiver's elements."""

    VIEW = "view"  # rearranges, repeats or copies elements: the same on every device
    CAST = "cast"  # converts them to one dtype
    OTHER = "other"  # computes something else


@dataclass(frozen=True)
class ChainOp:
    """One method call between a factory and the move: `.view(-1, 1)`, `.int()`, `.to(torch.int32)`."""

    call: cst.Call
    method: str
    step: Step
    dtype: str | None = None  # CAST: the dtype converted to, when known exactly
    dtype_evidence: str = ""  # CAST: what says it is that dtype
    legacy: str | None = None  # CAST by a legacy type, `.type(torch.IntTensor)`: that type, which also moves to the CPU


def method_chain(module: PythonModule, receiver: cst.BaseExpression) -> tuple[cst.BaseExpression, list[ChainOp]]:
    """The expression a chain of method calls starts from, and those calls, innermost first.

    `torch.arange(n).view(-1, 1).int()` gives `torch.arange(n)` and
    `[.view(-1, 1), .int()]`. A move to a device (`.to(d)`, `.cuda()`,
    `.to(other_tensor)`) ends the chain: it is a site of its own.
    """
    ops: list[ChainOp] = []
    node = receiver
    while (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
           and isinstance(node.func.value, cst.Call) and not _is_device_move(module, node)):
        ops.append(chain_op(module, node))
        node = node.func.value
    ops.reverse()
    return node, ops


def _is_device_move(module: PythonModule, call: cst.Call) -> bool:
    return move_method(call) is not None and cast_dtype(module, call) is None


def chain_op(module: PythonModule, call: cst.Call) -> ChainOp:
    method = call.func.attr.value
    if method in VIEW_METHODS and not (method == "view" and _may_name_a_dtype(module, call)):
        return ChainOp(call, method, Step.VIEW)
    if method in CAST_METHODS and all(arg.keyword is not None and arg.keyword.value == "memory_format" for arg in call.args):
        return ChainOp(call, method, Step.CAST, CAST_METHODS[method], f"`.{method}()` converts to {CAST_METHODS[method]}")
    target = cast_dtype(module, call) if method == "to" else None
    if target is not None:
        return ChainOp(call, method, Step.CAST, target.dtype, target.evidence)
    if method == "type":
        return _type_op(module, call)
    return ChainOp(call, method, Step.OTHER)


def _type_op(module: PythonModule, call: cst.Call) -> ChainOp:
    """`.type(torch.float16)` converts as `.to(torch.float16)` does, on the tensor's device. `.type(torch.IntTensor)`
    converts to int32 and moves to the CPU (`legacy`). `.type()` answers a string, and `.type("torch.cuda.IntTensor")`
    or `.type(torch.cuda.IntTensor)` moves to CUDA: other."""
    if len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star:
        return ChainOp(call, "type", Step.OTHER)
    target = call.args[0].value
    legacy = module.refers_to(target, LEGACY_TENSOR_TYPES) if isinstance(target, (cst.Name, cst.Attribute)) else None
    if legacy is not None:
        dtype = LEGACY_TENSOR_TYPES[legacy]
        return ChainOp(call, "type", Step.CAST, dtype, f"`{legacy}` is {dtype} on the CPU", legacy=legacy)
    # Only a dtype known exactly: `.type(self.dtype)` may hold a legacy CUDA type (`torch.cuda.FloatTensor`),
    # which moves the tensor as well.
    value = classify(module, target)
    if value.kind is Kind.DTYPE and value.proven and value.dtype is not None:
        return ChainOp(call, "type", Step.CAST, value.dtype, value.evidence)
    return ChainOp(call, "type", Step.OTHER)


def cast_dtype(module: PythonModule, call: cst.Call) -> Value | None:
    """The dtype `t.to(dtype)` / `t.to(dtype=...)` converts to, when that is all the call does; else None."""
    if move_method(call) != "to" or any(arg.star for arg in call.args):
        return None
    positional = [arg.value for arg in call.args if arg.keyword is None]
    keywords = {arg.keyword.value: arg.value for arg in call.args if arg.keyword is not None}
    if set(keywords) - {"dtype", "non_blocking", "copy"} or len(positional) > 1 or (positional and "dtype" in keywords):
        return None
    target = positional[0] if positional else keywords.get("dtype")
    value = classify(module, target) if target is not None else None
    return value if value is not None and value.kind is Kind.DTYPE and value.proven else None


def _may_name_a_dtype(module: PythonModule, call: cst.Call) -> bool:
    """`x.view(torch.int32)` reinterprets the bits; `x.view(-1)`, `x.view(shape)` do not."""
    if len(call.args) != 1 or call.args[0].star:
        return False
    only = call.args[0].value
    if isinstance(only, (cst.Tuple, cst.List)) or classify(module, only).kind is Kind.INTEGER:
        return False
    return not (isinstance(only, cst.Attribute) and only.attr.value == "shape"
                or isinstance(only, cst.Call) and isinstance(only.func, cst.Attribute) and only.func.attr.value == "size")


# -- the elements a factory makes, and what casts do to them ----------------------------------------


class Values(enum.StrEnum):
    ZERO_ONE = "0 or 1"  # every element is 0, 1 or uninitialised
    INTEGER = "integers"
    REAL = "real numbers"


@dataclass(frozen=True)
class Elements:
    """What the elements of a factory's result are, as far as its call shows."""

    values: Values
    dtype: str | None  # the dtype that holds them, when known exactly
    low: int | None = None  # INTEGER: the smallest and largest element, when the call's literals give them
    high: int | None = None
    evidence: str = ""


DEFAULT_FLOAT = "torch.float32"  # torch.get_default_dtype() unless the program sets another


def factory_elements(module: PythonModule, call: cst.Call, callee: str) -> Elements:
    """What `callee(...)` fills its result with (`callee` is one of FACTORIES)."""
    dtype_arg = keyword_arg(call, "dtype")
    given = classify(module, dtype_arg.value).dtype if dtype_arg is not None else None
    name = callee.removeprefix("torch.")
    positional = [arg.value for arg in call.args if arg.keyword is None and not arg.star]
    if callee in ZERO_ONE_FACTORIES:
        dtype = given if dtype_arg is not None else (None if name.endswith("_like") else DEFAULT_FLOAT)
        return Elements(Values.ZERO_ONE, dtype, 0, 1, f"`{name}` fills with 0 or 1 (or leaves unset)")
    if name in ("full", "full_like"):
        fill = positional[1] if len(positional) > 1 else getattr(keyword_arg(call, "fill_value"), "value", None)
        return _filled(module, fill, given, dtype_arg is not None, like=name == "full_like")
    if name == "arange":
        return _arange_elements(module, call, positional, given, dtype_arg is not None)
    if name in ("randint", "randperm", "randint_like"):
        sized = name == "randint" and keyword_arg(call, "size") is None
        bounds = _literal_ints(positional[:-1] if sized else positional[:2] if name == "randint" else positional[:1])
        low, high = ((0, bounds[0] - 1) if len(bounds) == 1 else (bounds[0], bounds[1] - 1)) if bounds else (None, None)
        dtype = given if dtype_arg is not None else (None if name.endswith("_like") else "torch.int64")
        return Elements(Values.INTEGER, dtype, low, high, f"`{name}` draws integers")
    dtype = given if dtype_arg is not None else (None if name.endswith("_like") else DEFAULT_FLOAT)
    return Elements(Values.REAL, dtype, evidence=f"`{name}` computes real numbers")


def _filled(module: PythonModule, fill, given: str | None, has_dtype: bool, like: bool) -> Elements:
    literal = _literal_ints([fill]) if fill is not None else None
    if isinstance(fill, cst.Name) and fill.value in ("True", "False") or literal in ([0], [1]):
        return Elements(Values.ZERO_ONE, given if has_dtype else (None if like else "torch.bool" if literal is None else "torch.int64"),
                        0, 1, f"the fill `{fill.value}`" if literal is None else f"the fill {literal[0]}")
    if literal:
        (value,) = literal
        dtype = given if has_dtype else (None if like else "torch.int64")
        exact = integer_range(dtype) if dtype is not None else None
        if exact is None or not exact[0] <= value <= exact[1]:
            return Elements(Values.INTEGER, dtype, evidence=f"the fill {value}, not known to be exact in the result's dtype")
        return Elements(Values.INTEGER, dtype, value, value, f"the fill {value}")
    found = classify(module, fill) if fill is not None else UNKNOWN
    if found.kind is Kind.INTEGER and found.proven:
        return Elements(Values.INTEGER, given if has_dtype else (None if like else "torch.int64"), evidence="an integer fill")
    if isinstance(fill, cst.Float):
        return Elements(Values.REAL, given if has_dtype else (None if like else DEFAULT_FLOAT), evidence=f"the fill {fill.value}")
    return Elements(Values.REAL, given if has_dtype else None, evidence="a fill that may be fractional")


def _arange_elements(module: PythonModule, call: cst.Call, positional, given: str | None, has_dtype: bool) -> Elements:
    """Integers when the start and the step are (the end only sets how many): int64 unless `dtype=` says otherwise.

    An end that is not provably an integer is read as one, as OPT102's plain
    rewrite reads it: a float end would make float32 values, the same
    integers while below 2**24.
    """
    keywords = {arg.keyword.value: arg.value for arg in call.args if arg.keyword is not None}
    if len(positional) >= 2:
        start_and_step = [positional[0], positional[2] if len(positional) > 2 else keywords.get("step")]
    else:
        start_and_step = [keywords.get("start"), keywords.get("step")]
    for value in start_and_step:
        found = classify(module, value) if value is not None else None
        if found is not None and not (found.kind is Kind.INTEGER and found.proven):
            return Elements(Values.REAL, given if has_dtype else None,
                            evidence=f"`arange` with a start or step `{module.text(value)}` that may be fractional")
    dtype = given if has_dtype else "torch.int64"
    literals = _literal_ints(positional) if positional and not {"start", "end", "step"} & set(keywords) else None
    if not literals:
        return Elements(Values.INTEGER, dtype, evidence="`arange` of integers")
    start, end, step = (0, literals[0], 1) if len(literals) == 1 else (literals + [1])[:3]
    count = max(0, -((start - end) // step)) if step else 0
    if count == 0:
        return Elements(Values.INTEGER, dtype, 0, 0, "an empty `arange`")
    last = start + (count - 1) * step
    return Elements(Values.INTEGER, dtype, min(start, last), max(start, last), f"`arange` from {start} to {last}")


def _literal_ints(nodes) -> list[int] | None:
    """The integer literals `nodes` spell (`3`, `-1`), or None when any is something else."""
    values = []
    for node in nodes:
        negative = isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus)
        inner = node.expression if negative else node
        if not isinstance(inner, cst.Integer):
            return None
        values.append(-int(inner.evaluated_value) if negative else int(inner.evaluated_value))
    return values


@dataclass(frozen=True)
class Conversion:
    """A cast judged: the elements after it, and whether the device computes them as the host does."""

    elements: Elements
    proven: bool  # False: the same values only while they stay in a range this file does not bound
    reason: str


def convert(elements: Elements, target: str | None) -> Conversion | str:
    """`elements` converted to `target`, or why converting them may give other values on another device.

    Exact conversions give the same values on every device. An integer dtype
    converted to another integer dtype wraps the same way everywhere. An
    integer converted to a floating dtype is exact within that dtype's
    integers (2**24 for float32): proven where the factory's literals bound
    the values, else only plausible (not proven).
    """
    source = elements.dtype
    if elements.values is Values.ZERO_ONE:
        return Conversion(Elements(Values.ZERO_ONE, target, 0, 1), True, f"0 and 1 are exact in every dtype ({elements.evidence})")
    if target is None:
        return "converts to a dtype this file does not name exactly"
    if source == target:
        return Conversion(elements, True, f"already {target}: nothing to convert")
    exact = integer_range(target)
    if elements.values is Values.INTEGER:
        if elements.low is not None and exact is not None and exact[0] <= elements.low and elements.high <= exact[1]:
            return Conversion(Elements(Values.INTEGER, target, elements.low, elements.high, elements.evidence), True,
                              f"{elements.evidence}: every value is exact in {target}")
        if source is not None and is_integer_dtype(source) and is_integer_dtype(target):
            values = Values.ZERO_ONE if target == "torch.bool" else Values.INTEGER
            return Conversion(Elements(values, target, evidence=elements.evidence), True,
                              f"{source} to {target} is an integer conversion, which wraps the same way on every device")
        if source is not None and is_integer_dtype(source) and exact is not None:
            return Conversion(Elements(Values.INTEGER, target, evidence=elements.evidence), False,
                              f"{source} to {target} is exact while every value is within ±{exact[1]}, which this file "
                              "does not bound")
    if source is not None and widens_float(source, target):
        return Conversion(Elements(elements.values, target, elements.low, elements.high, elements.evidence), True,
                          f"every {source} value is a {target} value")
    return f"converting {elements.values.value} held in {source or 'an unknown dtype'} to {target} is not proven exact"


# -- how many elements a factory makes ------------------------------------------------------------


def factory_numel(module: PythonModule, call: cst.Call, callee: str) -> int | None:
    """The number of elements of `callee(...)`'s result when the call's literals give it, else None."""
    if any(arg.star for arg in call.args):
        return None
    name = callee.removeprefix("torch.")
    positional = [arg.value for arg in call.args if arg.keyword is None]
    keywords = {arg.keyword.value: arg.value for arg in call.args if arg.keyword is not None}
    if "size" in keywords:
        return _numel([keywords["size"]])
    if name in ("zeros", "ones", "empty", "rand", "randn"):
        return _numel(positional)
    if name == "full":
        return _numel(positional[:1])
    if name in ("randint", "normal") and len(positional) >= (2 if name == "randint" else 3):
        return _numel(positional[-1:])
    if name == "eye":
        sides = _literal_ints(positional[:2])
        return sides[0] * sides[-1] if sides else None
    if name == "randperm":
        found = _literal_ints(positional[:1])
        return found[0] if found else None
    if name in ("linspace", "logspace"):
        steps = positional[2] if len(positional) > 2 else keywords.get("steps")
        found = _literal_ints([steps]) if steps is not None else None
        return found[0] if found else None
    if name == "arange" and positional and not {"start", "end", "step"} & set(keywords):
        found = _literal_ints(positional)
        if not found:
            return None
        start, end, step = (0, found[0], 1) if len(found) == 1 else (found + [1])[:3]
        return max(0, -((start - end) // step)) if step else None
    return None


def _numel(sizes: list[cst.BaseExpression]) -> int | None:
    """The product of sizes given as integer literals, or as one tuple or list of them."""
    if len(sizes) == 1 and isinstance(sizes[0], (cst.Tuple, cst.List)):
        if any(isinstance(element, cst.StarredElement) for element in sizes[0].elements):
            return None
        sizes = [element.value for element in sizes[0].elements]
    elif not sizes:
        return None
    found = _literal_ints(sizes)
    return math.prod(found) if found is not None else None
