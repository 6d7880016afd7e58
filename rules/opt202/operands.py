"""The copy's operands, each as the rewrite must spell it twice: the buffer, the sizes, the element type, the device.

`from_blob(ptr, {sizes}, options).to(device)`: the buffer must be this
function's own pageable memory, the sizes plain enough to evaluate again,
the options a plain dtype (its C++ element type gives the byte count), the
device a value with no side effects. Each function returns what it found,
or a `Kept` that says why the operand blocks the rewrite.
"""

from __future__ import annotations

import re

from optpatch.rule import KeepCategory, Kept
from optpatch.rule.cpp import CppUnit, CursorKind, Node, Token, TypeKind, split_top_level, unwrap

# The C++ element type of each dtype spelling (torch::kInt64, at::kLong, at::ScalarType::Long, ...).
_ELEMENT_TYPES = {
    "Byte": "uint8_t", "UInt8": "uint8_t", "Char": "int8_t", "Int8": "int8_t",
    "Short": "int16_t", "Int16": "int16_t", "Int": "int32_t", "Int32": "int32_t",
    "Long": "int64_t", "Int64": "int64_t", "UInt16": "uint16_t", "UInt32": "uint32_t", "UInt64": "uint64_t",
    "Float": "float", "Float32": "float", "Double": "double", "Float64": "double",
    "Half": "at::Half", "Float16": "at::Half", "BFloat16": "at::BFloat16", "Bool": "bool",
}
NAMESPACE = r"(?:(?:torch|at|c10)::)?"  # the namespace a spelling of torch may carry
_DTYPE = rf"{NAMESPACE}(?:k(?P<k>\w+)|ScalarType::(?P<s>\w+))"
# The options argument, spelled so that it names the dtype and nothing else.
_OPTIONS_FORMS = (
    (re.compile(rf"^{_DTYPE}$"), "scalar_type"),
    (re.compile(rf"^{NAMESPACE}dtype\({_DTYPE}\)$"), "options"),
    (re.compile(rf"^{NAMESPACE}TensorOptions\(\)\.dtype\({_DTYPE}\)$"), "options"),
    (re.compile(rf"^{NAMESPACE}TensorOptions\({_DTYPE}\)$"), "options"),
)

_SIZE_TOKENS_ALLOWED = re.compile(r"^(\w+|::|\.|->|\(|\)|\[|\]|\+|-|\*|/|%|<<|>>)$")
_SIZE_METHODS = frozenset({"size", "numel", "dim", "stride", "sizes"})

# What a `Device(...)` may be made of to be evaluated twice: names (a variable, `kCUDA`) and literals.
_PURE_DEVICE_PARTS = frozenset({CursorKind.DECL_REF_EXPR, CursorKind.INTEGER_LITERAL, CursorKind.STRING_LITERAL})
_POINTER_CASTS = frozenset({
    CursorKind.CSTYLE_CAST_EXPR, CursorKind.CXX_STATIC_CAST_EXPR, CursorKind.CXX_REINTERPRET_CAST_EXPR,
})
_ARRAY_TYPES = frozenset({TypeKind.CONSTANTARRAY, TypeKind.VARIABLEARRAY, TypeKind.DEPENDENTSIZEDARRAY})

# TensorOptions' methods, all const: each returns new options and leaves the variable as it was.
_OPTIONS_READERS = frozenset({
    "dtype", "device", "layout", "requires_grad", "pinned_memory", "memory_format", "device_index",
    "has_dtype", "has_device", "has_layout", "has_requires_grad", "has_pinned_memory", "has_memory_format",
})


def element_type(unit: CppUnit, options: Node, function: Node) -> Kept | tuple[str, str, str]:
    """(the options' text, their form, the C++ element type they name) when the options are a plain dtype,
    written in the call or held by a local options variable nothing changes; Kept otherwise."""
    options_text = " ".join(unit.node_text(options).split())
    held = _options_initialiser(unit, options, function)
    compact = "".join((unit.node_text(held) if held is not None else options_text).split())
    for pattern, form in _OPTIONS_FORMS:
        match = pattern.match(compact)
        if match:
            name = match.group("k") or match.group("s")
            if held is not None:
                form = "options"  # a variable of options: `opts.device(d)` keeps its dtype
            element = _ELEMENT_TYPES.get(name)
            if element is None:
                return Kept(f"element type of `{options_text}` is not known to optpatch", KeepCategory.UNKNOWN_SIZE)
            return options_text, form, element
    return Kept(
        f"options `{options_text}` do not name just a dtype: the element type is unknown, and a device in them would mean device memory", KeepCategory.UNKNOWN_SIZE
    )


def _options_initialiser(unit: CppUnit, options: Node, function: Node) -> Node | None:
    """The initialiser of the options when they are a local variable of this function that nothing can change
    after its declaration (each other use reads it through a const method, `opts.device(d)`, or hands it to
    from_blob): `torch::TensorOptions().dtype(torch::kInt64)` in `auto opts = ...;`. None otherwise."""
    node = _copied(options)
    variable = _local_variable(unit, node, function)
    if variable is None or variable.kind is not CursorKind.VAR_DECL or variable.start > node.start:
        return None
    initialisers = variable.expressions()
    if len(initialisers) != 1 or not all(_reads_options(r) for r in unit.references_to(variable)):
        return None
    return initialisers[0]


def _copied(node: Node) -> Node:
    """What `node` copies: through implicit conversions and the copy constructor an argument passed by value
    calls (`CALL_EXPR TensorOptions` over `opts`)."""
    while True:
        inner = node.expressions()
        if len(inner) != 1 or not _is_copy_of(node, inner[0]):
            return node
        node = inner[0]


def _is_copy_of(outer: Node, inner: Node) -> bool:
    wrapper = outer.kind in (CursorKind.UNEXPOSED_EXPR, CursorKind.CALL_EXPR)
    return wrapper and (outer.start, outer.end) == (inner.start, inner.end)


def _reads_options(reference: Node) -> bool:
    """A use of an options variable that cannot change it: the object of a const method, or a from_blob argument."""
    node = reference
    while node.parent is not None and _is_copy_of(node.parent, node):
        node = node.parent
    parent = node.parent
    if parent is None:
        return False
    if parent.kind is CursorKind.MEMBER_REF_EXPR:
        called = parent.parent is not None and parent.parent.kind is CursorKind.CALL_EXPR
        return parent.spelling in _OPTIONS_READERS and called
    return parent.kind is CursorKind.CALL_EXPR and parent.spelling == "from_blob"


def device_of(unit: CppUnit, to_call: Node) -> Kept | tuple[str, bool]:
    """The target device's text, and whether it is a DeviceType (torch::kCUDA) rather than a Device."""
    if to_call.spelling == "cuda":
        if to_call.arguments():
            return Kept("`.cuda(index)`: spell the device with .to(device)", KeepCategory.CANNOT_SPELL)
        return "torch::kCUDA", True
    method = unit.referenced(to_call)
    parameters = [t.get_canonical().spelling for t in method.type.argument_types()] if method is not None else []
    arguments = to_call.arguments()
    if not parameters or not arguments:
        return Kept("the `.to()` overload did not resolve", KeepCategory.UNRESOLVED)
    first = parameters[0]
    if "TensorOptions" in first:
        # torch's own headers have no `to(Device)`: a device converts to TensorOptions. What was written decides.
        given = unwrap(arguments[0]).cursor.type.get_canonical().spelling
        if re.search(r"\bc10::Device(Type)?$", given):
            first = given
    if "ScalarType" in first or "TensorOptions" in first:
        return Kept("`.to()` converts the dtype or takes options: not a plain device copy", KeepCategory.OTHER)
    if len(arguments) > 1 and "ScalarType" in parameters[1]:
        return Kept("`.to(device, dtype)` also converts: not a plain copy", KeepCategory.OTHER)
    for extra in arguments[1:]:
        text = unit.node_text(extra).strip()
        if text == "true":
            return Kept("`.to(..., non_blocking=true)` is already asynchronous", KeepCategory.DELIBERATE)
        if text != "false":
            return Kept(f"`.to()` argument `{text}` is not a literal `false`", KeepCategory.OTHER)
    device = arguments[0]
    text = " ".join(unit.node_text(device).split())
    if "DeviceType" in first:
        if not re.fullmatch(rf"{NAMESPACE}(kCUDA|DeviceType::CUDA)", text.replace(" ", "")):
            return Kept(f"`.to({text})` is not a CUDA device", KeepCategory.NOT_A_DEVICE)
        return text, True
    if not _is_pure_device(unwrap(device)):
        return Kept(f"device `{text}` is not a variable, `x.device()` or a `Device(...)` of names and literals: it would be evaluated twice",
                    KeepCategory.CANNOT_SPELL)
    return text, False


def _is_pure_device(node: Node) -> bool:
    """A variable, `x.device()` / `x[0].device()` on one, or a `Device(...)` made of names and literals
    (`torch::Device(torch::kCUDA, index)`): safe to evaluate a second time."""
    if node.kind is CursorKind.DECL_REF_EXPR:
        return True
    if node.kind in (CursorKind.CALL_EXPR, CursorKind.CXX_FUNCTIONAL_CAST_EXPR) and node.spelling == "Device":
        arguments = [unwrap(argument) for argument in node.arguments()]
        return bool(arguments) and all(argument.kind in _PURE_DEVICE_PARTS for argument in arguments)
    if node.kind is not CursorKind.CALL_EXPR or node.spelling != "device" or node.arguments():
        return False
    target = node.call_object()
    target = unwrap(target) if target is not None else None
    if target is not None and target.kind is CursorKind.CALL_EXPR and target.spelling == "operator[]":
        operands = [unwrap(c) for c in target.expressions() if c.spelling != "operator[]"]
        if len(operands) != 2 or operands[1].kind is not CursorKind.INTEGER_LITERAL:
            return False
        target = operands[0]
    return target is not None and target.kind is CursorKind.DECL_REF_EXPR


def pageable_buffer(unit: CppUnit, pointer: Node, function: Node) -> Kept | tuple[str, str]:
    """Why `pointer` is pageable host memory of this function, and the variable behind it; or Kept."""
    node = unwrap(pointer)
    while node.kind in _POINTER_CASTS:
        node = unwrap(node.expressions()[-1])
    text = unit.node_text(pointer)
    if node.kind is CursorKind.CALL_EXPR and node.spelling == "data" and not node.arguments():
        owner = node.call_object()
        variable = _local_variable(unit, unwrap(owner), function) if owner is not None else None
        if variable is not None and variable.cursor.type.get_canonical().spelling.startswith("std::vector<"):
            if variable.kind is CursorKind.PARM_DECL:
                return f"`{variable.spelling}` is a std::vector taken by value (this function's own pageable heap memory)", variable.spelling
            return f"`{variable.spelling}` is a local std::vector (pageable heap memory)", variable.spelling
    if node.kind is CursorKind.DECL_REF_EXPR:
        variable = _local_variable(unit, node, function)
        if variable is not None and variable.kind is CursorKind.VAR_DECL and variable.type_kind in _ARRAY_TYPES:
            return f"`{variable.spelling}` is a local array (pageable stack memory)", variable.spelling
    return Kept(
        f"`{text}` is not a local array or std::vector of this function: it may be pinned memory "
        "(read by the copy after this call returns) or device memory", KeepCategory.DEVICE_MEMORY
    )


def _local_variable(unit: CppUnit, node: Node, function: Node) -> Node | None:
    """The local variable (or by-value parameter) of `function` that `node` names; None for anything else."""
    if node.kind is not CursorKind.DECL_REF_EXPR:
        return None
    target = unit.node_of(unit.referenced(node))
    if target is None or target.kind not in (CursorKind.VAR_DECL, CursorKind.PARM_DECL):
        return None
    if not function.start <= target.start < function.end:
        return None
    if target.type_kind in (TypeKind.LVALUEREFERENCE, TypeKind.RVALUEREFERENCE) or "static" in {
        t.spelling for t in unit.tokens_in(target.start, target.end)
    }:
        return None
    return target


def sizes_of(unit: CppUnit, sizes: Node) -> Kept | list[str]:
    """The text of each size in the braced list `sizes`; Kept when the byte count cannot be written from them."""
    tokens = unit.tokens_in(sizes.start, sizes.end)
    text = unit.node_text(sizes)
    if len(tokens) < 3 or tokens[0].spelling != "{" or tokens[-1].spelling != "}":
        return Kept(f"sizes `{text}` are not a braced list: the byte count cannot be written down", KeepCategory.UNKNOWN_SIZE)
    elements = split_top_level(tokens[1:-1])
    for element in elements:
        if not element or not _is_plain_size(element):
            return Kept(f"size `{text}` may have side effects: it would be evaluated twice", KeepCategory.CANNOT_SPELL)
    return [unit.text(element[0].start, element[-1].end) for element in elements]


def _is_plain_size(tokens: list[Token]) -> bool:
    """Names, numbers, arithmetic, `x.size(0)`-like calls and casts (`(int64_t)n`, `static_cast<int64_t>(n)`):
    nothing that a second evaluation could change."""
    tokens = _without_named_casts(tokens)
    if tokens is None:
        return False
    for index, token in enumerate(tokens):
        if not _SIZE_TOKENS_ALLOWED.match(token.spelling):
            return False
        following = tokens[index + 1].spelling if index + 1 < len(tokens) else ""
        if following == "(" and token.kind == "identifier":
            previous = tokens[index - 1].spelling if index else ""
            if token.spelling not in _SIZE_METHODS or previous not in (".", "->"):
                return False
    return True


def _without_named_casts(tokens: list[Token]) -> list[Token] | None:
    """`tokens` with each `static_cast<type>` left out (its parenthesised operand stays); None when a cast's type
    is more than names and `::`, or no `(` follows it."""
    kept: list[Token] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token.spelling != "static_cast":
            kept.append(token)
            index += 1
            continue
        close = index + 2
        while close < len(tokens) and tokens[close].spelling != ">":
            if tokens[close].kind not in ("identifier", "keyword") and tokens[close].spelling != "::":
                return None
            close += 1
        if index + 1 >= len(tokens) or tokens[index + 1].spelling != "<" or close + 1 >= len(tokens) or tokens[close + 1].spelling != "(":
            return None
        index = close + 1
    return kept
