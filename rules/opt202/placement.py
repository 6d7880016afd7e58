"""Where the allocation and the copy go, and who receives the copy.

A copy that initialises a new local becomes that declaration; one that is
returned or passed to a call goes through a new local before its statement,
when running it there first has the same effect; anything else that can be
spelled becomes an immediately-invoked lambda in its place. A `Kept` says
why the copy's place cannot be rewritten.
"""

from __future__ import annotations

import enum

from optpatch.rule import KeepCategory, Kept
from optpatch.rule.cpp import CppUnit, CursorKind, Node


class Placement(enum.Enum):
    """Where the allocation and the copy go."""

    DECLARATION = "declaration"  # `T t = from_blob(...).to(d);`: the declaration becomes the allocation
    BEFORE_STATEMENT = "before the statement"  # a new local before the statement that uses the copy
    IN_PLACE = "in place"  # no statement can go before it: an immediately-invoked lambda


class Consumer(enum.Enum):
    """What receives the copy."""

    LOCAL = "a local variable"
    RETURNED = "returned"
    ARGUMENT = "an argument"
    MEMBER = "a member"


# Between the copy and its statement, these would make the copy run conditionally or in another order.
_ORDERING_OPERATORS = frozenset({"&&", "||", ","})
_WRAPPERS = (CursorKind.UNEXPOSED_EXPR, CursorKind.CALL_EXPR, CursorKind.PAREN_EXPR)


# (placement, consumer, consumer's name, statement, result variable, the whole copy expression)
Placed = tuple[Placement, Consumer, str, "Node | None", "Node | None", Node]


def place(unit: CppUnit, to_call: Node, pointer_name: str) -> Kept | Placed:
    """Where the copy `to_call` goes and who receives it; Kept when its place cannot be rewritten."""
    expression = to_call
    while (
        expression.parent is not None and expression.parent.kind in _WRAPPERS
        and (expression.parent.start, expression.parent.end) == (to_call.start, to_call.end)
    ):
        expression = expression.parent
    parent = expression.parent
    if parent is not None and parent.kind is CursorKind.VAR_DECL:
        declared = _declaration(unit, parent, expression)
        if isinstance(declared, Kept):
            return declared
        return (Placement.DECLARATION, Consumer.LOCAL, parent.spelling, *declared, expression)
    received = _consumer(unit, expression)
    if isinstance(received, Kept):
        return received
    consumer, name = received
    if consumer is Consumer.MEMBER:
        return Placement.IN_PLACE, consumer, name, None, None, expression
    statement = _statement_before(unit, expression, pointer_name)
    placement = Placement.IN_PLACE if statement is None else Placement.BEFORE_STATEMENT
    return placement, consumer, name, statement, None, expression


def _declaration(unit: CppUnit, variable: Node, expression: Node) -> Kept | tuple[Node, Node]:
    """The declaration's statement and variable; Kept unless the copy is all the declaration holds."""
    statement = variable.parent
    if (
        statement is None or statement.kind is not CursorKind.DECL_STMT or statement.parent is None
        or statement.parent.kind is not CursorKind.COMPOUND_STMT or len(statement.children) != 1
    ):
        return Kept("the declaration is not a statement of its own", KeepCategory.CANNOT_SPELL)
    after = unit.token_after(expression.end)
    if after is None or after.spelling != ";" or after.end != statement.end:
        return Kept("something follows the copy in the declaration", KeepCategory.CANNOT_SPELL)
    return statement, variable


def _consumer(unit: CppUnit, expression: Node) -> Kept | tuple[Consumer, str]:
    """Who receives the copy: a `return`, a call's argument, a member initialiser."""
    parent = expression.parent
    while parent is not None and parent.kind is CursorKind.PAREN_EXPR:
        parent = parent.parent
    if parent is not None and parent.kind is CursorKind.RETURN_STMT:
        return Consumer.RETURNED, ""
    if parent is not None and parent.kind is CursorKind.CONSTRUCTOR:
        members = [c for c in parent.children if c.kind is CursorKind.MEMBER_REF and c.end <= expression.start]
        if members:
            return Consumer.MEMBER, members[-1].spelling
    if parent is not None and parent.kind is CursorKind.CALL_EXPR and expression in parent.arguments():
        callee = parent.spelling or unit.text(parent.start, expression.start).split("(")[0].strip()
        return Consumer.ARGUMENT, callee
    return Kept(
        "the copy is neither bound to a new local, returned, passed to a call nor a member's initialiser",
        KeepCategory.CANNOT_SPELL,
    )


def _statement_before(unit: CppUnit, expression: Node, pointer_name: str) -> Node | None:
    """The statement of a block that the copy can run just before, with the same effect; None when there is none
    (a condition evaluated again and again, a branch, a lambda, a short circuit, another use of the buffer)."""
    node = expression
    while node.parent is not None and node.parent.kind is not CursorKind.COMPOUND_STMT:
        node = node.parent
        if node.kind in (CursorKind.CONDITIONAL_OPERATOR, CursorKind.LAMBDA_EXPR) or (
            node.kind is CursorKind.BINARY_OPERATOR and node.spelling in _ORDERING_OPERATORS
        ):
            return None
        in_block = node.parent.kind in (CursorKind.COMPOUND_STMT, CursorKind.DECL_STMT)
        if not in_block and not node.cursor.kind.is_expression():
            return None  # inside an if, a loop, a switch: not every path, or not once
    statement = node
    whole = statement.kind in (CursorKind.RETURN_STMT, CursorKind.DECL_STMT) or statement.cursor.kind.is_expression()
    if node.parent is None or not whole:
        return None
    outside = [t for t in unit.tokens_in(statement.start, statement.end) if not expression.start <= t.start < expression.end]
    if any(t.spelling == pointer_name for t in outside):
        return None  # the statement also touches the buffer: the copy keeps its place
    return statement
