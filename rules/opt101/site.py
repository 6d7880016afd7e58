"""A site of OPT101, and where its value goes: bound to a name, to `self.<name>`, in a list, or used at once.

The value that holds the allocation's memory is the call itself, the call
moved (`.cuda()`, `.to(d)`: as fresh, the same values) or wrapped in
`nn.Parameter(...)` (the same storage). Bound to one local name or to
`self.<name>`, it is followed by the overwrite proof; any other use keeps the
site, for one of the reasons below.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from optpatch.rule import Context, KeepCategory
from optpatch.rule.python import PythonModule

from .allocation import ModuleFacts

_PARAMETER = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})


@dataclass(frozen=True)
class Site:
    """One allocation in libcst's tree: the call, its kind (`zeros`, `new_full`, ...), where it runs, and the facts
    of its module."""

    module: PythonModule
    call: cst.Call
    kind: str
    context: Context
    facts: ModuleFacts


# Why an allocation is kept whatever follows it, and which kind of use that is; `unbound_reason` and
# alone.py's `judged_alone` say the same.
FILLS_OUT = ("`out=` fills an existing tensor, which may be read elsewhere", KeepCategory.OUT_TARGET)
RETURNED = ("returned to the caller, who may read the zeros", KeepCategory.RETURNED)
PASSED = ("passed straight to `{}(...)`, which may read it", KeepCategory.PASSED)
USED_THROUGH = ("used at once through `.{}`", KeepCategory.READ_BEFORE_WRITE)
SEVERAL_NAMES = ("assigned to several names at once", KeepCategory.STORED)
IN_AN_EXPRESSION = ("used directly in an expression, not bound to a local name", KeepCategory.READ_BEFORE_WRITE)
ANOTHER_OBJECT = ("stored on another object, which other code may read", KeepCategory.STORED)
UNPACKED = ("the result is unpacked or stored, not bound to one name", KeepCategory.STORED)
DISCARDED = ("the result is discarded: the allocation does nothing, or the call is kept for a side effect (an "
             "exception, a dispatch); remove it, or leave it as it is", KeepCategory.DISCARDED)


def allocated_value(module: PythonModule, call: cst.Call) -> tuple[cst.Call, bool]:
    """The value that holds the allocation's memory: the zeros, moved (`.cuda()`, `.to(d)`: as fresh, the same
    values), or wrapped in `nn.Parameter(...)` (the same storage); and whether it is a parameter."""
    value = moved_result(module, call)
    argument = module.parent(value)
    wrapper = module.parent(argument) if isinstance(argument, cst.Arg) else None
    if (isinstance(wrapper, cst.Call) and module.refers_to(wrapper.func, _PARAMETER) is not None
            and (argument is wrapper.args[0] and argument.keyword is None and not argument.star
                 or argument.keyword is not None and argument.keyword.value == "data")):
        return wrapper, True
    return value, False


def moved_result(module: PythonModule, call: cst.Call) -> cst.Call:
    """`torch.zeros(n).cuda()` / `.to(d)`: the moved result is as fresh as the zeros, and holds their values."""
    node = call
    while True:
        attribute = module.parent(node)
        outer = module.parent(attribute) if attribute is not None else None
        if not (isinstance(attribute, cst.Attribute) and attribute.attr.value in ("to", "cuda")
                and isinstance(outer, cst.Call) and outer.func is attribute):
            return node
        node = outer


def bound_target(parent: cst.CSTNode | None, call: cst.Call) -> cst.BaseExpression | None:
    if isinstance(parent, cst.Assign) and parent.value is call and len(parent.targets) == 1:
        return parent.targets[0].target
    if isinstance(parent, cst.AnnAssign) and parent.value is call:
        return parent.target
    return None


def unbound_reason(module: PythonModule, parent: cst.CSTNode | None) -> tuple[str, KeepCategory]:
    """Why a value bound to no name is kept, from the node that holds it."""
    if isinstance(parent, cst.Return):
        return RETURNED
    if isinstance(parent, cst.Arg):
        call = module.parent(parent)
        return PASSED[0].format(module.text(call.func) if isinstance(call, cst.Call) else "a call"), PASSED[1]
    if isinstance(parent, cst.Attribute):
        return USED_THROUGH[0].format(parent.attr.value), USED_THROUGH[1]
    if isinstance(parent, cst.Assign):
        return SEVERAL_NAMES
    return IN_AN_EXPRESSION
