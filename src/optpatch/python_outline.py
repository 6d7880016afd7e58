"""The outline of a Python module: what libcst parses when the rules need only part of it.

libcst's parse and the frontend's index cost about 60% of a scan of whole
modules, and most of a file that holds a site is functions without one. A rule that knows
what its `check` reads says so in `Rule.needs` (the `ast` nodes whose
functions it reads). Every function or class that holds none of those
nodes is then replaced, before libcst sees the file, by a stub that binds
the same name and spans the same characters:

    def forward(self, x):                 def forward():\"\"\"
        y = self.proj(x)          ->
        return y * 2                                   \"\"\"

What stays, character for character: every statement that is not a `def`
or `class` (imports, module constants, `if`/`try` blocks and all they
hold), every function that holds a needed node, and every class that does,
with the same treatment inside it. So a kept function sees the same
module: the same imports, the same module and class names bound by the
same kinds of statement, at offsets and lines unchanged, which is all name
resolution (python_scope.py) reads beyond the function itself. Except for
one thing: a function that binds a module name from inside (`global`, or
`:=` in a decorator or default) adds a binding of that name. Its stub
drops the binding, so it is stubbed only when no code that stays reads the
name, and no rule resolves the name in a stubbed function
(`Rule.resolved_in_stubs`): then no resolution a rule asks for can see the
difference. A `nonlocal` binds inside the def that holds it.

One kind of module statement is stubbed too: a large assignment of
literal data (a generated table: numbers, strings, tuples, lists, dicts;
no name, call or attribute) whose names no code that stays reads. Its
value becomes an empty tuple over the same characters, `TABLE = ( ... )`,
so the statement binds the same names in the same way; no rule can see
the value but through a read of those names, and a read in code that
stays keeps it (`_data_stubs`). Without it, a 2.75 MB table of 60,000
rows cost libcst minutes, in the analysis and again in the safety net.

A rule may also leave out sites whose verdict needs nothing of their
function, and judge them from the `ast` when their function was stubbed
(OPT101's `judged_alone` (rules/opt101/alone.py): a result passed, returned or stored at once).

The outline has the file's length and its line breaks, so every span the
frontend records is a span of the file: findings, edits and `module.text`
read the file itself, and nothing needs mapping back. A rewritten file is
checked by CPython whole and by libcst through another outline, one that
keeps the definitions the edits wrote in (python_frontend.rewrite_error).
tests/python/test_python_outline.py holds every rule's findings with and
without the outline to the same answers.

One difference remains, by design: a file CPython parses but libcst
refuses (a tab in an indentation CPython reads as consistent) only inside
a stubbed function is analysed through its outline, and its findings and
fixes are reported, where parsing the whole module gives libcst's syntax
error. Finding nothing there would mean parsing the whole file, which the
outline exists to avoid, and for a file CPython accepts, the outline's
answer is the more useful one.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_left, bisect_right
from typing import Callable, Iterable

from optpatch.source import LINE_BREAK

_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_LINE_CONTENT = re.compile(r"[^\r\n]+")
_QUOTES = '"""'
# Below this many characters a value costs libcst a few milliseconds at most: not worth a stub.
_SMALLEST_DATA = 1000


def outline(
    text: str,
    tree: ast.Module,
    needed_lines: Iterable[int],
    bindings: Iterable[tuple[int, frozenset[str]]] = (),
    reads: Callable[[], dict[str, list[int]]] | None = None,
) -> str | None:
    """`text` with every def and class that holds none of `needed_lines` stubbed; None when none is.

    `tree` is `ast.parse(text)`; `needed_lines` are the 1-based lines of the
    nodes the rules need. `bindings`: the line and names of each `global`
    or `:=` that may bind a module name from inside a def or class
    (python_screen.bound_outside); its def or class is kept when code that
    stays reads one of those names (`reads()`: name -> lines), and a kept one
    may read another's, so this runs to a fixpoint. With `reads`, the value
    of a large module-level assignment of literal data that no code that
    stays reads is stubbed too (`_data_stubs`).
    """
    lines = _Lines(text)
    needed = set(needed_lines)
    pending = list(bindings)
    if reads is None:  # nothing says who reads them: keep them all
        needed.update(line for line, _ in pending)
        pending = []
    while True:
        stubs = _stubs(lines, tree, sorted(needed))
        if not pending:
            break
        stubbed = sorted((first, last) for *_, first, last in stubs)
        seen = [
            (line, names) for line, names in pending
            if any(_kept(stubbed, read) for name in names for read in reads().get(name, ()))
        ]
        if not seen:
            break
        needed.update(line for line, _ in seen)
        pending = [binding for binding in pending if binding not in seen]
    if reads is not None:
        stubs += _data_stubs(lines, tree, sorted(needed), reads, sorted((first, last) for *_, first, last in stubs))
    if not stubs:
        return None
    pieces, done = [], 0
    for start, end, replacement, *_ in sorted(stubs):
        pieces += (text[done:start], replacement)
        done = end
    pieces.append(text[done:])
    return "".join(pieces)


def _stubs(lines: _Lines, tree: ast.Module, needed: list[int]) -> list[tuple[int, int, str, int, int]]:
    """(start, end, replacement, first line, last line) for each def and class holding none of `needed` (sorted)."""
    stubs = []

    def visit(body: list[ast.stmt]) -> None:
        for statement in body:
            if not isinstance(statement, _DEFINITIONS):
                continue  # kept whole, with any definitions inside it
            first = statement.decorator_list[0].lineno if statement.decorator_list else statement.lineno
            if _holds(needed, first, statement.end_lineno):
                if isinstance(statement, ast.ClassDef):
                    visit(statement.body)
                continue
            stub = _stub(lines, statement, first)
            if stub is not None:
                stubs.append((*stub, first, statement.end_lineno))

    visit(tree.body)
    return stubs


def _data_stubs(
    lines: _Lines, tree: ast.Module, needed: list[int], reads: Callable[[], dict[str, list[int]]],
    stubbed: list[tuple[int, int]],
) -> list[tuple[int, int, str, int, int]]:
    """(start, end, replacement, first line, last line) for the value of each large module-level data assignment.

    A generated table (`TABLE = [(0, 'a'), ...]`, 60,000 rows in 2.75 MB)
    cost libcst about 0.3 ms a row, twice: in the analysis and in the
    safety net. Its value becomes `(` and `)` around spaces (line breaks
    kept), an empty tuple bound by the same statement: the same names,
    bound by the same kind of statement, at the same offsets. Only a value
    of `_SMALLEST_DATA` characters or more, built of literals alone (no
    name, call or attribute, so no read, call or binding of anything
    disappears with it), in a statement holding none of `needed`, whose
    names no code that stays reads: a rule that resolves such a name from
    kept code would see the empty tuple, so there the value stays.
    """
    stubs = []
    for statement in tree.body:
        targets = _data_targets(statement)
        if targets is None or _holds(needed, statement.lineno, statement.end_lineno):
            continue
        value = statement.value
        start = lines.offset(value.lineno, value.col_offset)
        end = lines.offset(value.end_lineno, value.end_col_offset)
        if end - start < _SMALLEST_DATA or not _literal(value):
            continue
        if any(_kept(stubbed, line) for name in targets for line in reads().get(name, ())):
            continue
        blank = _LINE_CONTENT.sub(_spaces, lines.text[start + 1 : end - 1])
        stubs.append((start, end, f"({blank})", statement.lineno, statement.end_lineno))
    return stubs


def _literal(value: ast.expr) -> bool:
    """True when `value` is literal data: `-1`, `1+2j`, `(0, 'a')`, `[...]`, `{...}`; no name, call or attribute.

    A walk of its own: `ast.walk` cost as much as the rest of the outline on a 60,000-row table."""
    todo: list = [value]
    while todo:
        node = todo.pop()
        kind = type(node)
        if kind is ast.Constant:
            continue
        if kind is ast.List or kind is ast.Tuple or kind is ast.Set:
            todo += node.elts
        elif kind is ast.Dict:  # a `**mapping` has the key None: not literal
            todo += node.keys
            todo += node.values
        elif kind is ast.UnaryOp and type(node.op) in (ast.USub, ast.UAdd):
            todo.append(node.operand)
        elif kind is ast.BinOp and type(node.op) in (ast.Add, ast.Sub):
            todo += (node.left, node.right)
        else:
            return False
    return True


def _data_targets(statement: ast.stmt) -> list[str] | None:
    """The names `NAME = ...` or `NAME: T = ...` (or `A = B = ...`) binds; None for any other statement."""
    if type(statement) is ast.Assign and all(type(target) is ast.Name for target in statement.targets):
        return [target.id for target in statement.targets]
    if type(statement) is ast.AnnAssign and type(statement.target) is ast.Name and statement.value is not None:
        return [statement.target.id]
    return None


def _holds(needed: list[int], first: int, last: int) -> bool:
    """True when one of `needed` (sorted) lies in the lines `first` to `last`."""
    at = bisect_left(needed, first)
    return at < len(needed) and needed[at] <= last


def _kept(stubbed: list[tuple[int, int]], line: int) -> bool:
    """True when `line` lies in no stubbed span (sorted, disjoint)."""
    at = bisect_right(stubbed, (line, float("inf"))) - 1
    return at < 0 or stubbed[at][1] < line


class _Lines:
    """Where each line of the text starts and where its content ends (before its line break)."""

    def __init__(self, text: str):
        self.text = text
        breaks = list(LINE_BREAK.finditer(text))
        self.starts = [0] + [match.end() for match in breaks]
        self.ends = [match.start() for match in breaks] + [len(text)]

    def start(self, line: int) -> int:
        return self.starts[line - 1]

    def end(self, line: int) -> int:
        return self.ends[line - 1]

    def offset(self, line: int, column: int) -> int:
        """The offset of an `ast` position: `column` counts UTF-8 bytes of the line."""
        start = self.starts[line - 1]
        content = self.text[start : self.ends[line - 1]]
        return start + (column if content.isascii() else len(content.encode()[:column].decode()))


def _stub(lines: _Lines, statement: ast.stmt, first: int) -> tuple[int, int, str] | None:
    """(start, end, replacement) for the lines `first` to the statement's last; None where no stub fits.

    The stub is `def NAME(` (or `class NAME(`) at the statement's own
    indentation on the first line with room for it (the statement's own
    line always has), then `):\"\"\"` as soon after as there is room, and
    the string it opens swallows the rest of the region, closing at the end
    of its last line with room for the quotes. Everything else becomes
    spaces; the line breaks stay.
    """
    text = lines.text
    last = statement.end_lineno
    own_line = lines.start(statement.lineno)
    indent = text[own_line : own_line + statement.col_offset]
    if indent.strip(" \t") or (statement.decorator_list and not _starts_with(lines, first, indent, "@")):
        return None  # a form feed in the indentation, or a decorator's `@` not where it should be
    keyword = "class" if isinstance(statement, ast.ClassDef) else "def"
    opening = f"{indent}{keyword} {statement.name}("
    place = _place(lines, opening, first, last, lines.start(first))
    body = _place(lines, "):" + _QUOTES, first, last, place + len(opening)) if place is not None else None
    if body is None:
        return None
    after = body + len(_QUOTES) + 2
    close = next(
        (lines.end(n) - len(_QUOTES) for n in range(last, first - 1, -1)
         if lines.end(n) - max(lines.start(n), after) >= len(_QUOTES)),
        None,
    )
    if close is None:
        return None
    start, end = lines.start(first), lines.end(last)
    blank = _LINE_CONTENT.sub(_spaces, text[start:end])
    pieces, done = [], 0
    for at, piece in ((place - start, opening), (body - start, "):" + _QUOTES), (close - start, _QUOTES)):
        pieces += (blank[done:at], piece)
        done = at + len(piece)
    pieces.append(blank[done:])
    return start, end, "".join(pieces)


def _spaces(content: re.Match) -> str:
    return " " * (content.end() - content.start())


def _place(lines: _Lines, piece: str, first: int, last: int, not_before: int) -> int | None:
    """The first offset from `not_before` where `piece` fits before a line's end: there, or at a later line's start."""
    for n in range(first, last + 1):
        at = max(lines.start(n), not_before)
        if lines.end(n) - at >= len(piece):
            return at
    return None


def _starts_with(lines: _Lines, line: int, indent: str, prefix: str) -> bool:
    start = lines.start(line)
    return lines.text.startswith(indent + prefix, start)
