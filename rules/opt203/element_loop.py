"""An element loop on the host: `auto a = out.accessor<T, 1>();` (or `T* p = out.data_ptr<T>();`) followed at
once by a 1-D loop from 0 below the tensor's size that writes `a[i]` first: every element written before
any read, proven from the tokens.
"""

from __future__ import annotations

import re

from optpatch.rule.cpp import CppUnit, CursorKind, Node, Token, matching_bracket

from .allocation import Allocation
from .kernel import COMPOUND_ASSIGNMENTS

_ASSIGNMENTS = COMPOUND_ASSIGNMENTS | {"="}


def element_loop(unit: CppUnit, allocation: Allocation, use: Node, statement: Node) -> list[str]:
    """`auto a = out.accessor<T, 1>();` (or `T* p = out.data_ptr<T>();`) then at once a loop writing `a[i]` for
    every index: the proof lines, or [] when the pattern is not this."""
    handle = _declared_handle(unit, statement, use)
    if handle is None:
        return []
    block = allocation.block.children
    position = block.index(statement)
    if position + 1 >= len(block) or block[position + 1].kind is not CursorKind.FOR_STMT:
        return []
    loop = block[position + 1]
    tokens = unit.tokens_in(loop.start, loop.end)
    spelled = [t.spelling for t in tokens]
    # for ( <type>* i = 0 ; i < BOUND ; ++i | i++ ) BODY
    try:
        open_at = spelled.index("(")
        first, second = [k for k in range(open_at, len(spelled)) if spelled[k] == ";"][:2]
    except ValueError:
        return []
    init, condition = spelled[open_at + 1 : first], spelled[first + 1 : second]
    close = matching_bracket(tokens, open_at)
    if close is None or len(init) < 3 or init[-2:] != ["=", "0"]:
        return []
    counter = init[-3]
    step = spelled[second + 1 : close]
    if step not in (["++", counter], [counter, "++"]) or len(condition) < 3 or condition[:2] != [counter, "<"]:
        return []
    bound = "".join(condition[2:])
    if not _covers(unit, allocation, bound, handle, loop):
        return []
    body = tokens[close + 1 :]
    if body and body[0].spelling == "{":
        body = body[1:]
    write = _first_statement(body)
    if [t.spelling for t in write[:5]] != [handle, "[", counter, "]", "="]:
        return []
    if any(t.spelling in (allocation.name, handle) for t in write[5:]):
        return []
    if _changes(body, counter):
        return []
    line = unit.line_of(loop.start)
    return [f"L{unit.line_of(statement.start)}: `{handle}` reaches the elements of `{allocation.name}`",
            f"L{line}: the loop writes `{handle}[{counter}]` first, for every {counter} below `{bound}`, "
            f"before any read"]


def _declared_handle(unit: CppUnit, statement: Node, use: Node) -> str | None:
    """The variable declared by `statement` as `out.accessor<T, 1>()` / `out.data_ptr<T>()` of a 1-D tensor."""
    if statement.kind is not CursorKind.DECL_STMT or len(statement.children) != 1:
        return None
    variable = statement.children[0]
    text = "".join(t.spelling for t in unit.tokens_in(use.start, statement.end))
    accessor = re.fullmatch(rf"{re.escape(use.spelling)}\.accessor<[\w:]+,1>\(\);", text)
    pointer = re.fullmatch(rf"{re.escape(use.spelling)}\.(?:mutable_)?data_ptr<[\w:]+>\(\);", text)
    return variable.spelling if accessor or pointer else None


def _covers(unit: CppUnit, allocation: Allocation, bound: str, handle: str, loop: Node) -> bool:
    """The loop's bound is the tensor's element count: `out.numel()`, `out.size(0)` of a 1-D tensor, or the one
    size the allocation names, a variable nothing changes before the loop."""
    name = allocation.name
    if bound in (f"{name}.numel()", f"{handle}.size(0)"):
        return True
    arguments = allocation.call.arguments()
    if allocation.call.spelling != "zeros" or not arguments:
        return False
    sizes = "".join(t.spelling for t in unit.tokens_in(arguments[0].start, arguments[0].end))
    one_size = sizes[1:-1] if sizes.startswith("{") and "," not in sizes else None
    if bound == f"{name}.size(0)":
        return one_size is not None
    if bound != one_size or not re.fullmatch(r"\w+", bound):
        return False
    # Nothing after the allocation names the size but the loop's condition: no call can change it either.
    after = unit.tokens_in(allocation.statement.end, loop.end)
    return sum(1 for t in after if t.spelling == bound) == 1


def _first_statement(tokens: list[Token]) -> list[Token]:
    depth = 0
    for index, token in enumerate(tokens):
        if token.spelling in ("(", "[", "{"):
            depth += 1
        elif token.spelling in (")", "]", "}"):
            depth -= 1
        elif token.spelling == ";" and depth == 0:
            return tokens[:index]
    return tokens  # a body of one statement: its extent ends before the `;`


def _changes(tokens: list[Token], name: str) -> bool:
    """`name` assigned, incremented, its address taken or passed to a call (which may take it by reference)
    anywhere in `tokens`."""
    for index, token in enumerate(tokens):
        if token.spelling != name:
            continue
        before = tokens[index - 1].spelling if index else ""
        after = tokens[index + 1].spelling if index + 1 < len(tokens) else ""
        if after in _ASSIGNMENTS or after in ("++", "--") or before in ("++", "--", "&"):
            return True
        if before in ("(", ",") and after in (")", ","):
            return True
    return False
