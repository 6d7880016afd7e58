"""Whether the project's headers could still make a kept site a fix: read from the file's tokens, which a parse
with headers does not change.

A parse with headers costs 5-10 s of CPU the first time (a precompiled
header of torch's), so it is asked for only where its answer may matter
(`Rule.needs_headers`). A header-free parse drops the statements it cannot
type, so its first use of a variable may be the wrong one (apex's
`multi_tensor_l2norm_kernel.cu`: a use in a dropped `DISPATCH_*` call came
first). The tokens hold every use. The headers can only make a site a fix
where the first token that names the variable after the allocation is one of
the forms `first_use` proves a full write from (all read from the tokens):

- a kernel launch's argument, the whole tensor's data (`launch_of`, `whole_tensor_argument`);
- `name.fill_(`, `name.zero_(`, `name.copy_(`;
- `T* p = name.data_ptr<T>();` (or `.accessor`) with a `for` right after it that writes `p[` first;
- the output of `at::*_out(name, ...)`.

Even then, that use must run whenever the allocation does (`_may_not_run`): a
branch, a loop, a `?:`, `&&` or `||` the text shows around it keeps the site
whatever the headers say. A lambda may be the one an `AT_DISPATCH_*` macro
runs once, which only the headers tell, so a lambda does not decide it. An
`#if` between the two may hide or show uses, so it leaves the question open.
"""

from __future__ import annotations

import re

from optpatch.rule.cpp import CppUnit, Token, matching_bracket, opening_bracket

from .allocation import Allocation
from .first_use import FULL_WRITES, out_op
from .kernel import launch_of, whole_tensor_argument

_ELEMENT_HANDLES = frozenset({"accessor", "data_ptr", "mutable_data_ptr"})
_CONDITIONAL_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(?:if|ifdef|ifndef|elif|else)\b", re.M)
# Tokens that, in the statement of a use, make it run only sometimes.
_BRANCHING = frozenset({"?", "&&", "||", "if", "else", "for", "while", "do", "switch", "case", "default", "try",
                        "catch"})
_BRANCH_HEADS = frozenset({"if", "for", "while", "switch", "catch"})
_CLOSERS = frozenset({")", "]", "}"})
_OPENERS = frozenset({"(", "[", "{"})


def may_become_a_fix(unit: CppUnit, allocation: Allocation) -> str | None:
    """What the headers could still prove of a site kept without them (a question for the report), or None when
    its tokens keep it whatever they say."""
    statement_end = unit.token_index(allocation.statement.end)
    return _question(unit, allocation.name, statement_end, unit.token_index(allocation.block.start))


def unparsed_may_become_a_fix(unit: CppUnit, scope: int) -> str | None:
    """The same for a `torch::zeros(...)` the parse without headers could not type, tokens[scope] its `torch` or
    `at`: its local and its block read from the tokens. Only a local holds a tensor OPT203 follows: a call used in
    an expression (an argument, `at::cat({at::zeros(...), x})`, an operand, returned) stays kept whatever the
    headers say; `T x(torch::zeros(...))` is a local too, which only the headers can follow."""
    tokens = unit.tokens
    before = tokens[scope - 1].spelling if scope else ""
    if before in ("(", "{") and _declares_a_local(tokens, scope - 1):
        return "a local initialised in a way only the parse with headers can follow"
    if before != "=" or scope < 2 or tokens[scope - 2].kind != "identifier" or (
            scope >= 3 and tokens[scope - 3].spelling in (".", "->", "::")):
        return None
    block_open = _enclosing_brace(tokens, scope)
    statement_end = _statement_end(tokens, scope)
    if block_open is None or statement_end is None:
        return "its statement or block does not close"
    return _question(unit, tokens[scope - 2].spelling, statement_end, block_open)


def _declares_a_local(tokens: list[Token], bracket: int) -> bool:
    """`T x(` or `T x{` at tokens[bracket]: a name after something that ends a type, not a call `f(` or `a.f(`."""
    if bracket < 2 or tokens[bracket - 1].kind != "identifier":
        return False
    before = tokens[bracket - 2]
    return before.kind in ("identifier", "keyword") and before.spelling != "return" or before.spelling in (
        ">", "*", "&", "&&")


def _question(unit: CppUnit, name: str, statement_end: int, block_open: int) -> str | None:
    """The question for local `name`, allocated by the statement ending at tokens[statement_end] in the block that
    tokens[block_open] opens, or None. A use after that block runs on a path the allocation may not have taken."""
    tokens = unit.tokens
    block_close = matching_bracket(tokens, block_open)
    if block_close is None:
        return "its block does not close"
    use = next((i for i in range(statement_end, block_close)
                if tokens[i].spelling == name and tokens[i - 1].spelling not in (".", "->", "::")), None)
    if use is None:
        return None  # no token names it again in its block: no parse finds a use that runs whenever it does
    line = unit.line_of(tokens[use].start)
    if _CONDITIONAL_DIRECTIVE.search(unit.text(tokens[statement_end].start, tokens[use].start)):
        return f"an `#if` before `{name}`'s next use (L{line}) may hide another"
    form = _full_write_form(unit, use)
    if form is None or _may_not_run(tokens, use, block_open):
        return None
    return f"L{line}: `{name}` {form}: with the headers, that may prove a full write"


def _full_write_form(unit: CppUnit, use: int) -> str | None:
    """The full-write form the tokens around tokens[use] may be, or None."""
    tokens = unit.tokens
    launch = launch_of(unit, use)
    if launch is not None:  # the whole tensor's data, or a part of it (`out.contiguous().data_ptr()`: a copy's)
        argument = [t.spelling for t in launch.arguments[launch.position]]
        return "goes to a kernel launch" if whole_tensor_argument(argument, tokens[use].spelling) else None
    if out_op(unit, use):
        return "is an op's output"
    method = tokens[use + 2].spelling if use + 2 < len(tokens) and tokens[use + 1].spelling in (".", "->") else ""
    if method in FULL_WRITES:
        return f"is written by `{method}`"
    if method in _ELEMENT_HANDLES and _initialises_a_local(tokens, use) and _element_loop_follows(tokens, use):
        return f"gives a local its `{method}` before a loop"
    return None


def _initialises_a_local(tokens: list[Token], use: int) -> bool:
    """`T* p = name...`: an `=` after a name that is no member (`params.out = name...` stores it)."""
    return (use >= 3 and tokens[use - 1].spelling == "=" and tokens[use - 2].kind == "identifier"
            and tokens[use - 3].spelling not in (".", "->", "::"))


def _element_loop_follows(tokens: list[Token], use: int) -> bool:
    """`T* p = name.data_ptr<T>();` followed at once by `for (...)` whose first statement writes `p[`: the shape
    element_loop.py proves from (a nested loop, or a loop that starts otherwise, is not)."""
    end = _statement_end(tokens, use)
    if end is None or end + 2 >= len(tokens) or tokens[end + 1].spelling != "for" or tokens[end + 2].spelling != "(":
        return False
    close = matching_bracket(tokens, end + 2)
    if close is None:
        return False
    first = close + 2 if close + 1 < len(tokens) and tokens[close + 1].spelling == "{" else close + 1
    return first + 1 < len(tokens) and tokens[first].spelling == tokens[use - 2].spelling and tokens[
        first + 1].spelling == "["


def _may_not_run(tokens: list[Token], use: int, block_open: int) -> bool:
    """Whether the text shows that tokens[use] may not run whenever the block tokens[block_open] opens does: a
    branch or a loop around it inside that block, or a `?`, `&&` or `||` before it in its statement. Read
    backwards from the use to the block's `{`, skipping whole bracketed groups; a lambda leaves it open."""
    index, in_statement = use - 1, True
    while index > block_open:
        spelling = tokens[index].spelling
        if spelling in _CLOSERS:
            opener = opening_bracket(tokens, index)
            if opener is None or opener < block_open:
                return False  # unbalanced text: the tokens tell nothing
            if spelling == "}" and _opens_a_statement_block(tokens, opener):
                in_statement = False  # a statement before the use's, like `if (c) { ... }`
            index = opener - 1
            continue
        if spelling in _OPENERS:  # a bracket around the use
            before = tokens[index - 1].spelling
            if spelling == "(" and before in _BRANCH_HEADS:
                return True
            if spelling == "{":
                if _opens_a_branch(tokens, index):
                    return True
                in_statement = True  # the statement that holds this block or lambda
        elif in_statement and spelling == ";":
            in_statement = False
        elif in_statement and spelling in _BRANCHING:
            return True
        index -= 1
    return False


def _enclosing_brace(tokens: list[Token], index: int) -> int | None:
    """The `{` of the innermost block around tokens[index]: read backwards, skipping whole bracketed groups."""
    while index > 0:
        index -= 1
        spelling = tokens[index].spelling
        if spelling in _CLOSERS:
            opener = opening_bracket(tokens, index)
            if opener is None:
                return None
            index = opener
        elif spelling == "{":
            return index
    return None


def _statement_end(tokens: list[Token], index: int) -> int | None:
    """The `;` that ends the statement holding tokens[index], at its depth."""
    depth = 0
    for position in range(index, len(tokens)):
        spelling = tokens[position].spelling
        if spelling in _OPENERS:
            depth += 1
        elif spelling in _CLOSERS:
            depth -= 1
            if depth < 0:
                return None
        elif spelling == ";" and depth == 0:
            return position
    return None


def _opens_a_branch(tokens: list[Token], brace: int) -> bool:
    """`if (...) {`, `else {`, `for (...) {`, `do {`, `try {` and the like."""
    before = tokens[brace - 1].spelling
    if before in ("else", "do", "try"):
        return True
    if before != ")":
        return False
    opener = opening_bracket(tokens, brace - 1)
    return opener is not None and opener > 0 and tokens[opener - 1].spelling in _BRANCH_HEADS


def _opens_a_statement_block(tokens: list[Token], brace: int) -> bool:
    """A `{` that opens a block of statements (a branch's, or a plain one), not a lambda's body or an initialiser
    inside an expression."""
    before = tokens[brace - 1].spelling
    return _opens_a_branch(tokens, brace) or before in (";", "{", "}", ":")
