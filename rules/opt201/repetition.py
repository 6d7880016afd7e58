"""How often the declaration runs: whether it may run per element or per tile, where the heap allocation
of a `std::vector` costs what the array never did (the fix is then `validate`).

Within this file only: a declaration inside a loop, in a lambda handed to a
call that may run it per element (not a dtype dispatch or a registration,
which run it once per call), or in a function this file calls inside a loop
or hands to another call as a callback.
"""

from __future__ import annotations

import re

from optpatch.rule import Context
from optpatch.rule.cpp import FUNCTION_KINDS, LOOP_KINDS, CppUnit, CursorKind, Node

# Calls known not to run their callback per element or tile: ATen's dtype dispatch (and the projects that copy
# it) and call_once run it once; pybind11's `m.def`/`def_static` and the torch library's `m.impl`/`TORCH_FN`
# register a function that Python then calls once per call, as any host function.
_ONCE_CALLERS = re.compile(r"DISPATCH|call_once|^(?:def|def_static|impl|TORCH_FN)$", re.I)


def repeated_call(unit: CppUnit, declaration: Node, context: Context) -> str:
    """Why the declaration may run per element or per tile (so that an allocation there costs), or ""."""
    if context is Context.HOT:
        return "it is declared inside a loop"
    for ancestor in declaration.ancestors():
        if ancestor.kind is CursorKind.LAMBDA_EXPR:
            caller = _caller_of_argument(unit, ancestor)
            if caller and not _ONCE_CALLERS.search(caller):
                return f"it is in a lambda handed to `{caller}`, which may call it per element or per tile"
            holder = _holder(ancestor)
            if holder is not None:
                return _called_repeatedly(unit, holder)
            if caller is None:
                continue  # called where it is written: the function around it decides
            return ""
        if ancestor.kind in FUNCTION_KINDS:
            return _called_repeatedly(unit, ancestor)
    return ""


def _holder(lambda_expr: Node) -> Node | None:
    """The variable a lambda is stored in (`auto body = [&] {...};`), if any."""
    node = lambda_expr.parent
    while (
        node is not None and node.kind in (CursorKind.UNEXPOSED_EXPR, CursorKind.CALL_EXPR)
        and node.start == lambda_expr.start
    ):
        node = node.parent
    return node if node is not None and node.kind is CursorKind.VAR_DECL else None


def _caller_of_argument(unit: CppUnit, node: Node) -> str | None:
    """The name of the call that `node` (a lambda or a function's name) is an argument of; None when it is
    called right there (`[&] {...}()`, `f(x)`) or is no argument. Read from the tokens, which a macro's
    expansion (`AT_DISPATCH_...(..., [&] {...})`) leaves as written."""
    tokens = unit.tokens
    first = unit.token_index(node.start)
    last = unit.token_index(node.end)
    if last < len(tokens) and tokens[last].spelling in ("(", "<"):
        return None
    depth = 0
    for index in range(first - 1, -1, -1):
        spelling = tokens[index].spelling
        if spelling in (")", "]", "}"):
            depth += 1
        elif spelling in ("(", "[", "{"):
            if depth:
                depth -= 1
                continue
            if spelling != "(" or index == 0 or tokens[index - 1].kind != "identifier":
                return None
            return tokens[index - 1].spelling
        elif spelling == ";" and not depth:
            return None
    return None


def _called_repeatedly(unit: CppUnit, callable_: Node) -> str:
    """Where this file calls a function (or a variable holding a lambda) inside a loop, or hands it to another
    call as a callback; else ""."""
    name = callable_.spelling
    if not name or callable_.kind is CursorKind.LAMBDA_EXPR:
        return ""
    if callable_.kind is CursorKind.VAR_DECL:
        references = unit.references_to(callable_)
    else:
        references = [
            node for node in unit.nodes
            if node.kind is CursorKind.DECL_REF_EXPR and node.spelling == name
            and not callable_.start <= node.start < callable_.end
            and (target := unit.referenced(node)) is not None and target.canonical == callable_.cursor.canonical
        ]
    for node in references:
        line = unit.line_of(node.start)
        if any(a.kind in LOOP_KINDS and not unit.runs_once(a) for a in node.ancestors()):
            return f"`{name}` is called inside a loop (L{line})"
        caller = _caller_of_argument(unit, node)
        if caller and not _ONCE_CALLERS.search(caller):
            return f"`{name}` is handed to `{caller}` as a callback (L{line})"
    return ""
