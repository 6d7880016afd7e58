"""What holds the zeros: the local a `zeros` call initialises or is assigned to, its block and function, and
whether it is held in a way OPT203 follows (a `Kept` says how it is not: returned, passed at once, a
reference, a member, a use carried over from a loop's previous iteration).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from optpatch.rule import KeepCategory, Kept
from optpatch.rule.cpp import FUNCTION_KINDS, LOOP_KINDS, CppUnit, CursorKind, Node, TypeKind

# A size spelled this way rounds up or pads: a kernel sized by the data may leave the tail unwritten.
_PADDING_WORDS = re.compile(r"pad|round|align|ceil|div_up|divup|cdiv", re.I)
# Nodes that wrap an expression with the same extent: implicit conversions, copies, parentheses.
WRAPPER_KINDS = frozenset({CursorKind.UNEXPOSED_EXPR, CursorKind.CALL_EXPR, CursorKind.PAREN_EXPR})


@dataclass(frozen=True)
class Allocation:
    """`T out = torch::zeros(...);` or `out = at::zeros_like(...);`: the call, the name and the statement."""

    call: Node
    name: str
    target: object  # the variable's cindex cursor
    statement: Node  # the declaration or assignment statement, a direct child of `block`
    block: Node  # the compound statement it sits in
    function: Node  # the outermost host function around it


def allocation_of(unit: CppUnit, call: Node) -> Kept | Allocation:
    """The local that holds the call's tensor, or why the site is kept (how it is held, a loop-carried use)."""
    expression = _outer(call)
    parent = expression.parent
    if parent is not None and parent.kind is CursorKind.VAR_DECL:
        statement = parent.parent
        if statement is None or statement.kind is not CursorKind.DECL_STMT or len(statement.children) != 1:
            return Kept("declared with other variables in one statement", KeepCategory.CANNOT_SPELL)
        if parent.type_kind in (TypeKind.LVALUEREFERENCE, TypeKind.RVALUEREFERENCE):
            return Kept("bound to a reference", KeepCategory.OTHER)
        name, target = parent.spelling, parent.cursor
    elif (
        parent is not None and parent.kind in (CursorKind.BINARY_OPERATOR, CursorKind.CALL_EXPR)
        and _assigned_to(unit, parent, expression)
    ):
        statement = _outer(parent)
        first = unit.tokens_in(parent.start, parent.end)[0]
        left = next((c for c in parent.walk() if c.kind is CursorKind.DECL_REF_EXPR and c.start == first.start), None)
        name, target = first.spelling, unit.referenced(left) if left is not None else None
        if target is None:  # a name this parse could not resolve: the project's headers may declare it
            return Kept(f"assigned to `{name}`, which this parse could not resolve", KeepCategory.UNRESOLVED)
        if target.kind is not CursorKind.VAR_DECL:  # a parameter, a member (`MEMBER_REF_EXPR`)
            return Kept("assigned to something other than a local variable", KeepCategory.STORED)
    else:
        return _direct_use(unit, expression)
    block = statement.parent
    if block is None or block.kind is not CursorKind.COMPOUND_STMT:
        return Kept("the allocation is not a statement of a block", KeepCategory.CANNOT_SPELL)
    functions = [a for a in call.ancestors() if a.kind in FUNCTION_KINDS and a.kind is not CursorKind.LAMBDA_EXPR]
    if not functions:
        return Kept("not inside a function", KeepCategory.UNRESOLVED)
    allocation = Allocation(call, name, target, statement, block, functions[-1])
    carried = _loop_carried_use(unit, allocation)
    return allocation if carried is None else carried


def _outer(node: Node) -> Node:
    """The expression `node` is, through implicit conversions and copies that keep its extent."""
    while node.parent is not None and node.parent.kind in WRAPPER_KINDS and (
        node.parent.start, node.parent.end) == (node.start, node.end):
        node = node.parent
    return node


def _assigned_to(unit: CppUnit, operator: Node, expression: Node) -> bool:
    """`name = zeros(...)` as a statement of its own: a built-in `=` or Tensor's `operator=` call."""
    statement = _outer(operator)
    if statement.parent is None or statement.parent.kind is not CursorKind.COMPOUND_STMT:
        return False
    tokens = unit.tokens_in(operator.start, expression.start)
    return [t.spelling for t in tokens][1:] == ["="] and tokens[0].kind == "identifier"


def _direct_use(unit: CppUnit, expression: Node) -> Kept:
    """A tensor no local holds: returned, or used at once."""
    parent = expression.parent
    while parent is not None and parent.kind in (CursorKind.PAREN_EXPR, CursorKind.UNEXPOSED_EXPR):
        parent = parent.parent
    if parent is not None and parent.kind is CursorKind.RETURN_STMT:
        return Kept("returned: the caller may read elements nothing here writes", KeepCategory.RETURNED)
    if parent is not None and parent.kind in (CursorKind.CALL_EXPR, CursorKind.MEMBER_REF_EXPR):
        return Kept("used at once in an expression, not held by a local: its readers are not followed", KeepCategory.PASSED)
    return Kept("not held by a local variable: its readers are not followed", KeepCategory.OTHER)


def _loop_carried_use(unit: CppUnit, allocation: Allocation) -> Kept | None:
    """In a loop, a use written before the allocation reads the previous iteration's tensor on the next."""
    for loop in allocation.statement.ancestors():
        if loop is allocation.function:
            return None
        if loop.kind in LOOP_KINDS and any(
            r.start < allocation.statement.start for r in references(unit, allocation, loop.start, loop.end)
        ):
            return Kept(f"in a loop, `{allocation.name}` is used before this allocation: the next iteration may read "
                        "the zeros", KeepCategory.LOOP)
    return None


def padded_size(unit: CppUnit, call: Node) -> Kept | None:
    """A padded size, for a use that may write only the data's part (a kernel, an op)."""
    arguments = call.arguments()
    if call.spelling == "zeros" and arguments:
        sizes = unit.node_text(arguments[0])
        padded = _PADDING_WORDS.search(sizes)
        if padded:
            return Kept(f"the size `{' '.join(sizes.split())}` is padded or rounded (`{padded.group(0)}`): a kernel "
                        "sized by the data may leave the padding unwritten for a caller to read", KeepCategory.PADDED)
    return None


def references(unit: CppUnit, allocation: Allocation, start: int, end: int) -> list[Node]:
    """The references to the allocation's variable that start between `start` and `end` (within its function),
    in order."""
    return [
        n for n in allocation.function.walk()
        if n.kind in (CursorKind.DECL_REF_EXPR, CursorKind.VARIABLE_REF) and n.spelling == allocation.name
        and start <= n.start < end
        and unit.referenced(n) == allocation.target
    ]
