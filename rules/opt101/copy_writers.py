"""The `copy_` writers that make an unproven buffer worth a validation run.

Where no proof holds, a buffer filled by `copy_` may still never be read
past what was written: a local whose every use is a prefix slice, first
copied into, or an attribute that its class fills with a full or prefix
`copy_` in some method. Neither can be proven statically; both make the fix
validate tier.
"""

from __future__ import annotations

import ast
from functools import lru_cache

import libcst as cst

from optpatch.rule.python import PythonModule, walk


def prefix_copy_pattern(module: PythonModule, statement, name: str) -> str | None:
    """`buf[:n].copy_(src)` first, and every later use a prefix slice `buf[:m]`."""
    function = module.enclosing_function(statement)
    if function is None:
        return None
    uses = [
        node for node in walk(function.body)
        if type(node) is cst.Name and node.value == name and module.start(node) > module.start(statement)
        and not _is_attribute_name(module, node)
    ]
    if not uses:
        return None
    for use in uses:
        subscript = module.parent(use)
        if not (isinstance(subscript, cst.Subscript) and subscript.value is use and _is_prefix(subscript)):
            return None
    first = module.parent(uses[0])
    attribute = module.parent(first)
    call = module.parent(attribute)
    if isinstance(attribute, cst.Attribute) and attribute.attr.value == "copy_" and isinstance(call, cst.Call):
        return f"`{module.text(call)}` (L{module.start(call)[0]})"
    return None


def attribute_writer(module: PythonModule, call: cst.Call, attribute: str) -> str | None:
    """A `self.<attribute>.copy_(...)` or `self.<attribute>[:n].copy_(...)` somewhere in the class."""
    cls = module.enclosing(call, cst.ClassDef)
    if cls is None:
        return None
    return _class_writers(module, cls).get(attribute)


@lru_cache(maxsize=1)  # the class asked last: its buffers are asked in a row, and no older tree is kept alive
def _class_writers(module: PythonModule, cls: cst.ClassDef) -> dict[str, str]:
    """The first full or prefix `self.<name>.copy_(...)` of the class for each name, in one walk of its body: a
    class with many attribute buffers asked for each (apex's distributed optimizers: one walk each, 20 ms)."""
    writers: dict[str, str] = {}
    for node in walk(cls.body):
        if not (type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value == "copy_"):
            continue
        receiver = node.func.value
        if isinstance(receiver, cst.Subscript) and _is_prefix(receiver):
            receiver = receiver.value
        if isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name) and receiver.value.value == "self":
            writers.setdefault(receiver.attr.value, f"`{module.text(node)}` (L{module.start(node)[0]})")
    return writers


def on_self(func: ast.expr) -> bool:
    """`self.<name>.copy_` or `self.<name>[...].copy_`: the `ast` shapes `attribute_writer` may accept."""
    receiver = func.value if isinstance(func, ast.Attribute) else None
    if isinstance(receiver, ast.Subscript):
        receiver = receiver.value
    return isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name) and receiver.value.id == "self"


def _is_prefix(subscript: cst.Subscript) -> bool:
    """`x[:n]` or `x[:]`: a slice of the leading dimension that starts at 0."""
    if len(subscript.slice) != 1:
        return False
    index = subscript.slice[0].slice
    return isinstance(index, cst.Slice) and index.lower is None and index.step is None


def _is_attribute_name(module: PythonModule, node: cst.Name) -> bool:
    parent = module.parent(node)
    return (isinstance(parent, cst.Attribute) and parent.attr is node) or (
        isinstance(parent, cst.Arg) and parent.keyword is node
    )
