"""The line limit every edit keeps, and the check that it does (docs/formatting.md, "Line limits").

The limit is the formatter's where one governs the file (black's or ruff's
`line-length`, yapf's `column_limit`, clang-format's `ColumnLimit`;
formatter_config.py), and otherwise, for Python, the file's own longest
line, but never less than PEP 8's 79 columns: an edit never makes a line
longer than the file already allows itself, and a line any linter accepts
is never refused. `ColumnLimit: 0` is clang-format's "no limit"; C++/CUDA
without a `.clang-format` is not checked yet (OPT202 breaks its copy once,
as docs/formatting.md says).

The rules shape their edits within the limit where they know how
(python_edits.py, cpp_edits.py). `Rule.fix` then checks every fix's edits
with `overlong_line`: a fix that would still write a line past the limit,
and longer than the longest line it replaces, is kept instead
(`KeepCategory.CANNOT_SPELL`), for every rule alike. A line that was already
too long may keep its length or shrink.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

from optpatch.formatter_config import CppStyle, PythonStyle
from optpatch.model import Edit
from optpatch.python_layout import width

PEP8_LINE_LENGTH = 79  # the least limit assumed for a Python file no formatter governs


@dataclass(frozen=True)
class LineLimit:
    columns: int
    basis: str  # where the limit comes from, for the keep's reason


@dataclass(frozen=True)
class Overlong:
    """A line a fix would write past the limit: its line in the original file, its width, and the limit."""

    line: int
    width: int
    limit: LineLimit

    def reason(self) -> str:
        return (f"the edit would make L{self.line} {self.width} columns long, past the line limit of {self.limit.columns} "
                f"({self.limit.basis}), and optpatch has no layout of it within the limit: kept rather than written "
                "past it")


def line_limit(style: PythonStyle | CppStyle, text: str) -> LineLimit | None:
    """The limit an edit of TEXT keeps under STYLE; None for C++ with no limit (`ColumnLimit: 0`, no .clang-format)."""
    if isinstance(style, CppStyle):
        # Without a .clang-format, C++ statements keep the shapes the rules give them (docs/formatting.md): not
        # yet held to the file's longest line.
        return LineLimit(style.column_limit, "clang-format's ColumnLimit") if style.column_limit else None
    if style.formatter is not None and style.line_length:
        name = "column_limit" if style.formatter.value == "yapf" else "line-length"
        return LineLimit(style.line_length, f"{style.formatter.value}'s {name}")
    return _own_limit(text, PEP8_LINE_LENGTH)


def _own_limit(text: str, floor: int) -> LineLimit:
    longest = longest_line(text)
    if longest >= floor:
        return LineLimit(longest, "the file's longest line; no formatter is configured")
    return LineLimit(floor, "PEP 8's, as the file's lines are all shorter; no formatter is configured")


@lru_cache(maxsize=8)
def longest_line(text: str) -> int:
    return max((width(line) for line in text.splitlines()), default=0)


def overlong_line(text: str, edits: Iterable[Edit], limit: LineLimit | None) -> Overlong | None:
    """The first line the edits would write past LIMIT and longer than the longest line they replace, or None.

    The edits are taken together, line by line: two insertions into one line
    are judged by the line they make between them.
    """
    if limit is None:
        return None
    for first, last, group in _by_lines(text, sorted(edits)):
        old = text[first:last]
        pieces, cursor = [], first
        for edit in group:
            pieces += [text[cursor : edit.start], edit.text]
            cursor = edit.end
        new = "".join(pieces) + text[cursor:last]
        widest = max((width(line) for line in new.splitlines()), default=0)
        if widest > limit.columns and widest > max((width(line) for line in old.splitlines()), default=0):
            return Overlong(text.count("\n", 0, group[0].start) + 1, widest, limit)
    return None


def _by_lines(text: str, edits: list[Edit]) -> Iterable[tuple[int, int, list[Edit]]]:
    """The edits in groups that share lines: (start of the first line, end of the last line, the edits)."""
    group: list[Edit] = []
    first = last = 0
    for edit in edits:
        start = text.rfind("\n", 0, edit.start) + 1
        end = text.find("\n", edit.end)
        end = len(text) if end < 0 else end
        if group and start <= last:
            group.append(edit)
            last = max(last, end)
            continue
        if group:
            yield first, last, group
        group, first, last = [edit], start, end
    if group:
        yield first, last, group
