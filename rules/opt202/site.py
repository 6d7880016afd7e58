"""What a site is: torch's `from_blob(ptr, {sizes}, options)` with `.to(device)` or `.cuda()` chained onto it,
and the pieces of it and of the code around it that the rewrite needs.

`site_of` gathers them in the order the rule checks its obligations (the
device, the call's shape, the buffer, the sizes, the element type, where the
copy goes), so the first blocker found is the one a `Kept` reports.
"""

from __future__ import annotations

from dataclasses import dataclass

from optpatch.rule import KeepCategory, Kept
from optpatch.rule.cpp import CppUnit, CursorKind, Node

from .operands import device_of, element_type, pageable_buffer, sizes_of
from .placement import Consumer, Placement, place

# What a site's outermost function may be: a function, a method, a function template, a constructor or a lambda.
_FUNCTIONS = frozenset({
    CursorKind.FUNCTION_DECL, CursorKind.CXX_METHOD, CursorKind.FUNCTION_TEMPLATE, CursorKind.CONSTRUCTOR,
    CursorKind.LAMBDA_EXPR,
})


@dataclass(frozen=True)
class Site:
    """The pieces of `ns::from_blob(ptr, {sizes}, opts).to(device)` and of the code around it."""

    placement: Placement
    consumer: Consumer
    consumer_name: str  # the local variable, the callee, the member; "" when returned
    statement: Node | None  # the declaration (DECLARATION), the statement (BEFORE_STATEMENT); None IN_PLACE
    result: Node | None  # the VAR_DECL of `t` (DECLARATION)
    expression: Node  # the whole `from_blob(...).to(...)`
    from_blob: Node
    to_call: Node
    namespace: str  # "torch" or "at"
    pointer: str
    pointer_name: str  # the variable behind the pointer
    buffer: str  # why the buffer is pageable host memory
    sizes: list[str]
    options: str
    options_form: str
    element: str
    device: str
    device_is_type: bool  # torch::kCUDA rather than a torch::Device

    @property
    def start(self) -> int:
        """Where the copy now happens: code before this runs before it."""
        return self.statement.start if self.statement is not None else self.expression.start


def is_torch_from_blob(unit: CppUnit, node: Node) -> bool:
    callee = unit.referenced(node)
    return callee is not None and unit.declared_by_library(callee, ("at", "torch"))


def chained_copy(from_blob: Node) -> Node | None:
    """The `.to(...)` or `.cuda()` call made directly on the from_blob result."""
    node = from_blob.parent
    while node is not None and node.kind is CursorKind.UNEXPOSED_EXPR:
        node = node.parent
    if node is None or node.kind is not CursorKind.MEMBER_REF_EXPR or node.spelling not in ("to", "cuda"):
        return None
    call = node.parent
    return call if call is not None and call.kind is CursorKind.CALL_EXPR else None


def outermost_function(node: Node) -> Node:
    functions = [a for a in node.ancestors() if a.kind in _FUNCTIONS]
    return functions[-1]


def site_of(unit: CppUnit, from_blob: Node, to_call: Node, function: Node) -> Kept | Site:
    """The site of `from_blob(...)` copied by `to_call` in `function`; Kept at the first piece that blocks it."""
    device = device_of(unit, to_call)
    if isinstance(device, Kept):
        return device
    arguments = from_blob.arguments()
    if len(arguments) != 3:
        return Kept("from_blob with strides or a deleter: only (ptr, sizes, options) is rewritten", KeepCategory.CANNOT_SPELL)
    pointer, sizes, options = arguments
    buffer = pageable_buffer(unit, pointer, function)
    if isinstance(buffer, Kept):
        return buffer
    size_texts = sizes_of(unit, sizes)
    if isinstance(size_texts, Kept):
        return size_texts
    dtype = element_type(unit, options, function)
    if isinstance(dtype, Kept):
        return dtype
    why_pageable, pointer_name = buffer
    placed = place(unit, to_call, pointer_name)
    if isinstance(placed, Kept):
        return placed
    options_text, form, element = dtype
    device_text, device_is_type = device
    return Site(
        *placed, from_blob, to_call, _namespace(unit, from_blob), unit.node_text(pointer), pointer_name, why_pageable,
        size_texts, options_text, form, element, device_text, device_is_type,
    )


def _namespace(unit: CppUnit, from_blob: Node) -> str:
    """`torch` or `at`, as the call spells it; `at` for a bare `from_blob` (ATen is there whenever it is)."""
    first, second = unit.tokens_in(from_blob.start, from_blob.end)[:2]
    return "torch" if (first.spelling, second.spelling) == ("torch", "::") else "at"
