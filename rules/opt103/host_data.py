"""Whether the copied data is in host memory, and what the file shows of its size.

Host data is a list or tuple display, a comprehension, a repeated display,
a number, `list(...)`, `range(...)`, `sorted(...)`, `.tolist()`, a NumPy
array, a parameter annotated as one of these, or a name every binding of
which is one. Its length decides whether pinning pays: a list of runtime
length, or past the measured 1,024 elements, costs its conversion either way.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst
from libcst.metadata import Assignment

from optpatch.analysis.torch_api import keyword_arg
from optpatch.rule.python import PythonModule

from .names import single_assignment

# Lists longer than this were not measured to gain (1,024 elements: yes, 65,536: 9 ms either way).
MEASURED_LIST_LENGTH = 1024


@dataclass(frozen=True)
class HostData:
    """Data provably in host memory, and what this file shows of its size."""

    evidence: str
    array: bool = False  # a NumPy array: its size is not tracked
    length: int | None = None  # the elements of a list whose length this file shows
    runtime_length: str | None = None  # the runtime size that sets a list's length

    @property
    def large(self) -> bool:
        return self.runtime_length is not None or (self.length is not None and self.length > MEASURED_LIST_LENGTH)


def data_argument(call: cst.Call) -> cst.BaseExpression | None:
    """The data a constructor converts: its first positional argument, or `data=`."""
    for arg in call.args:
        if arg.keyword is None and not arg.star:
            return arg.value
    keyword = keyword_arg(call, "data")
    return keyword.value if keyword is not None else None


def takes_pin_keyword(module: PythonModule, call: cst.Call) -> bool:
    """Whether `torch.tensor(data, pin_memory=True)` works: the data is Python data, never an array or a tensor."""
    data = data_argument(call)
    found = host_data(module, data, 0) if data is not None else None
    return found is not None and not found.array


def host_data(module: PythonModule, node: cst.BaseExpression, depth: int) -> HostData | None:
    """What shows that `node` is host data (a list, a number, a NumPy array), or None."""
    if depth > 4:
        return None
    if isinstance(node, (cst.List, cst.Tuple)):
        length = _display_length(node)
        return HostData("a list display" if length is None else f"a list display of {length:,} elements", length=length)
    if isinstance(node, (cst.Integer, cst.Float)) or (
            isinstance(node, cst.UnaryOperation) and isinstance(node.expression, (cst.Integer, cst.Float))):
        return HostData("a Python number", length=1)
    if isinstance(node, cst.ListComp):
        return _comprehension(module, node)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
        return _repeated_list(module, node)
    if isinstance(node, cst.Call):
        return _host_call(module, node)
    if isinstance(node, cst.Name):
        return _host_name(module, node, depth)
    return None


def _display_length(node: cst.List | cst.Tuple) -> int | None:
    """Elements of a (nested) display, when no element hides its length."""
    total = 0
    for element in node.elements:
        if isinstance(element, cst.StarredElement):
            return None
        if isinstance(element.value, (cst.List, cst.Tuple)):
            inner = _display_length(element.value)
            if inner is None:
                return None
            total += inner
        else:
            total += 1
    return total


def _comprehension(module: PythonModule, node: cst.ListComp) -> HostData:
    length, runtime = 1, None
    clause = node.for_in
    while clause is not None:
        counted = _range_length(module, clause.iter)
        if counted is None:
            if runtime is None:
                return HostData(f"a list comprehension over `{module.text(clause.iter)}`, whose length is not known here")
        elif isinstance(counted, str):
            runtime = runtime or counted
        else:
            length *= counted
        clause = clause.inner_for_in
    if runtime is not None:
        return HostData(f"a list comprehension over `range({runtime})`", runtime_length=runtime)
    return HostData(f"a list comprehension of {length:,} elements", length=length)


def _range_length(module: PythonModule, node: cst.BaseExpression) -> int | str | None:
    """The length of `range(...)` (a number, or the runtime size as text), or None when `node` is not a range."""
    if not (isinstance(node, cst.Call) and module.qualified_names(node.func) == {"builtins.range"}):
        return None
    bounds = [_integer(arg.value) for arg in node.args]
    if node.args and all(bound is not None for bound in bounds) and len(bounds) <= 3:
        return len(range(*bounds))
    stop = node.args[0].value if len(node.args) == 1 else node.args[1].value if len(node.args) > 1 else node
    return module.text(stop)


def _integer(node: cst.BaseExpression) -> int | None:
    if isinstance(node, cst.Integer):
        return int(node.evaluated_value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) and isinstance(node.expression, cst.Integer):
        return -int(node.expression.evaluated_value)
    return None


def _repeated_list(module: PythonModule, node: cst.BinaryOperation) -> HostData | None:
    """`[v] * n` / `n * [v]`."""
    for display, count in ((node.left, node.right), (node.right, node.left)):
        if isinstance(display, (cst.List, cst.Tuple)):
            length, times = _display_length(display), _integer(count)
            if times is not None:
                return HostData("a repeated list display", length=None if length is None else length * times)
            return HostData(f"a list repeated `{module.text(count)}` times", runtime_length=module.text(count))
    return None


def _host_call(module: PythonModule, call: cst.Call) -> HostData | None:
    names = module.qualified_names(call.func)
    if names in ({"builtins.list"}, {"builtins.tuple"}) and len(call.args) == 1:
        counted = _range_length(module, call.args[0].value)
        if isinstance(counted, str):
            return HostData(f"a list of `range({counted})`", runtime_length=counted)
        return HostData(f"`{module.text(call.func)}(...)` builds a Python list", length=counted)
    if names == {"builtins.range"}:
        counted = _range_length(module, call)
        if isinstance(counted, str):
            return HostData(f"`range({counted})`", runtime_length=counted)
        return HostData("a range", length=counted)
    if names == {"builtins.sorted"}:
        return HostData("`sorted(...)` builds a Python list")
    if len(names) == 1 and next(iter(names)).startswith("numpy."):
        return HostData(f"`{module.text(call.func)}(...)` returns a NumPy array", array=True)
    if isinstance(call.func, cst.Attribute) and not call.args:
        method = call.func.attr.value
        if method == "tolist":
            return HostData("`.tolist()` returns a Python list")
        if method == "numpy":
            return HostData("`.numpy()` returns a NumPy array over host memory", array=True)
    return None


def _host_name(module: PythonModule, name: cst.Name, depth: int) -> HostData | None:
    """A name every binding of which is host data (an assignment, or a parameter annotated as such)."""
    bindings = module.bindings(name)
    if not bindings:
        return None
    found = []
    for binding in bindings:
        if not isinstance(binding, Assignment):
            return None
        if isinstance(binding.node, cst.Param):
            annotated = _annotated_host_data(module, binding.node)
            if annotated is None:
                return None
            found.append(annotated)
            continue
        if not isinstance(binding.node, cst.Name):
            return None
        _, value = single_assignment(module, binding.node)
        data = host_data(module, value, depth + 1) if value is not None else None
        if data is None:
            return None
        found.append(data)
    lengths = {data.length for data in found}
    runtime = next((data.runtime_length for data in found if data.runtime_length), None)
    evidence = "; ".join(dict.fromkeys(f"`{name.value}` is {data.evidence}" for data in found))
    return HostData(evidence, all(data.array for data in found), lengths.pop() if len(lengths) == 1 else None, runtime)


def _annotated_host_data(module: PythonModule, param: cst.Param) -> HostData | None:
    if param.annotation is None:
        return None
    annotation = param.annotation.annotation
    base = annotation.value if isinstance(annotation, cst.Subscript) else annotation
    names = module.qualified_names(base)
    spelled = module.text(annotation)
    if names & {"builtins.list", "builtins.tuple", "typing.List", "typing.Tuple"}:
        return HostData(f"the parameter `{param.name.value}`, annotated `{spelled}`")
    if names & {"numpy.ndarray", "numpy.typing.NDArray"}:
        return HostData(f"the parameter `{param.name.value}`, annotated `{spelled}`", array=True)
    return None
