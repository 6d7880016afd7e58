"""C++ statements written by a rule, laid out within the project's clang-format settings.

OPT202 writes two statements where there was one, OPT201 a declaration;
where the project has a `.clang-format` (formatter_config.py), each such
statement is kept within its `ColumnLimit` the way clang-format breaks the
common shapes, with its `ContinuationIndentWidth`:

- a statement that fits stays on one line;
- `T x = value;` breaks after the `=`, the value on the next line, when the
  value then fits;
- a call breaks inside its argument list, the one with several arguments:
  the arguments packed after the opening bracket and aligned with the first
  (`AlignAfterOpenBracket: Align`, `BinPackArguments`); if that does not
  fit, right after the bracket, the arguments packed on continuation lines.

clang-format weighs its choices by penalties, and for long statements it
may pick a different one of these layouts than the one chosen here (the
rules' manuals say so); every line still keeps to the column limit.
Without a `.clang-format` (`column_limit` None) or with `ColumnLimit: 0`
a statement stays on one line, as rules wrote it before.
"""

from __future__ import annotations

import re

from optpatch.formatter_config import CppStyle

_TOKEN = re.compile(
    r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|::|->|[=!<>+\-*/%&|^]=|<<|>>|&&|\|\||[A-Za-z_]\w*|\d[\w.]*|\S'
)
_OPEN, _CLOSE = "([{", ")]}"


def statement_lines(statement: str, indentation: str, style: CppStyle, newline: str = "\n", trailing: str = "") -> str:
    """`statement` (one line, without its indentation) laid out at `indentation` within the style's column limit.

    The first line is returned without the indentation, the others with it
    (the text replaces the statement where it starts). `trailing`: what
    follows the statement on its last line (a comment), which must fit too.
    Of the layouts that fit, the one with the fewest lines; on a tie, the
    first in `_candidates`' order, which follows clang-format's preferences.
    """
    limit = style.column_limit
    if not limit or len(indentation) + len(statement) + len(trailing) <= limit:
        return statement
    continuation = indentation + " " * style.continuation_indent_width
    fitting = [lines for lines in _candidates(statement, indentation, continuation, style)
               if all(len(line) <= limit for line in lines[:-1]) and len(lines[-1]) + len(trailing) <= limit]
    if not fitting:
        return statement  # nothing fits: one line, as the project would write it before breaking it by hand
    best = min(fitting, key=len)
    return newline.join(best)[len(indentation) :]


def _candidates(statement: str, indentation: str, continuation: str, style: CppStyle):
    """Layouts of the statement, in clang-format's order of preference among those with as many lines."""
    equals = _top_level_assignment(statement)
    if equals is None:
        yield from _call_layouts(statement, indentation, continuation, style)
        return
    target, value = statement[:equals].rstrip(), statement[equals + 1 :].strip()
    first = indentation + target + " ="
    yield [first, continuation + value]
    whole = list(_call_layouts(statement, indentation, continuation, style))
    deeper = continuation + " " * (len(continuation) - len(indentation))
    broken = [[first] + lines for lines in _call_layouts(value, continuation, deeper, style)]
    yield from [layout for pair in zip(whole, broken) for layout in pair]


def _call_layouts(text: str, indentation: str, continuation: str, style: CppStyle):
    """The call with several arguments broken: aligned after its bracket; after its caller's bracket, then
    aligned; right after its own bracket (the only way with `AlignAfterOpenBracket: AlwaysBreak`)."""
    tokens = [(m.start(), m.end()) for m in _TOKEN.finditer(text)]
    opening = _bracket_with_arguments(text, tokens)
    if opening is None:
        return
    closing = _matching(text, tokens, opening)
    arguments = _split_arguments(text, tokens, opening, closing)
    head, tail = text[: tokens[opening][1]], text[tokens[closing][0] :]
    limit, align, bin_pack = style.column_limit or 0, style.align_after_open_bracket, style.bin_pack_arguments
    if align in ("Align", "DontAlign"):
        following = " " * (len(indentation) + len(head)) if align == "Align" else continuation
        yield _packed(indentation + head, arguments, following, tail, limit, bin_pack)
    outer = text.rfind("(", 0, tokens[opening][0])
    if align == "Align" and outer >= 0 and _matching_offset(text, outer) >= tokens[closing][0]:
        inner_head = text[outer + 1 : tokens[opening][1]].lstrip()
        following = " " * (len(continuation) + len(inner_head))
        yield [indentation + text[: outer + 1]] + _packed(continuation + inner_head, arguments, following, tail,
                                                         limit, bin_pack)
    yield [indentation + head] + _packed(continuation, arguments, continuation, tail, limit, bin_pack)


def _packed(first: str, arguments: list[str], indentation: str, tail: str, limit: int, bin_pack: bool) -> list[str]:
    """Arguments after `first`, continued at `indentation`; `tail` ends the last.

    Bin-packed: filled greedily. Otherwise (`BinPackArguments: false`): all
    on the first line if they fit, else one per line.
    """
    pieces = [argument + ("," if index < len(arguments) - 1 else tail) for index, argument in enumerate(arguments)]
    if not bin_pack:
        joined = first + " ".join(pieces)
        return [joined] if len(joined) <= limit else [first + pieces[0]] + [indentation + p for p in pieces[1:]]
    lines, current, fresh = [], first, True
    for piece in pieces:
        candidate = current + ("" if fresh else " ") + piece
        if fresh or len(candidate) <= limit:
            current, fresh = candidate, False
        else:
            lines.append(current)
            current = indentation + piece
    lines.append(current)
    return lines


def _bracket_with_arguments(text: str, tokens) -> int | None:
    """The call whose arguments break: the first `(` holding a comma at its top level, else the first not empty."""
    for index, (start, _) in enumerate(tokens):
        if text[start] == "(":
            closing = _matching(text, tokens, index)
            depth = 0
            for inner in range(index + 1, closing):
                char = text[tokens[inner][0]]
                if char in _OPEN:
                    depth += 1
                elif char in _CLOSE:
                    depth -= 1
                elif char == "," and depth == 0:
                    return index
    return next((index for index, (start, _) in enumerate(tokens)
                 if text[start] == "(" and index + 1 < len(tokens) and text[tokens[index + 1][0]] != ")"), None)


def _matching_offset(text: str, offset: int) -> int:
    """The offset of the bracket closing the one at `offset`."""
    tokens = [(m.start(), m.end()) for m in _TOKEN.finditer(text)]
    index = next(i for i, (start, _) in enumerate(tokens) if start == offset)
    return tokens[_matching(text, tokens, index)][0]


def _matching(text: str, tokens, index: int) -> int:
    depth = 0
    for position in range(index, len(tokens)):
        char = text[tokens[position][0]]
        if char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            depth -= 1
            if depth == 0:
                return position
    return len(tokens) - 1


def _split_arguments(text: str, tokens, opening: int, closing: int) -> list[str]:
    arguments, depth, start = [], 0, tokens[opening][1]
    for position in range(opening + 1, closing):
        begin, end = tokens[position]
        char = text[begin]
        if char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            depth -= 1
        elif char == "," and depth == 0:
            arguments.append(text[start:begin].strip())
            start = end
    arguments.append(text[start : tokens[closing][0]].strip())
    return arguments


def _top_level_assignment(statement: str) -> int | None:
    """The offset of a declaration's or assignment's `=` outside brackets, or None."""
    depth = 0
    for match in _TOKEN.finditer(statement):
        token = match.group()
        if token in _OPEN:
            depth += 1
        elif token in _CLOSE:
            depth -= 1
        elif token == "=" and depth == 0:
            return match.start()
    return None
