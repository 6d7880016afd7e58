"""The lines a rewrite changed, aligned as `difflib` aligns them, without searching the whole file.

optpatch knows which spans of a file its edits replaced (offsets.composed_spans).
Outside those spans the old and the new text are the same text, shifted, so
a line diff needs no search there: `changed_blocks` turns the spans into
blocks of lines, and `opcodes` aligns them into the opcodes that
`difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()` gives.
The patch (patch.py) and the regions of fixes applied over several passes
(offsets.relocate_to_original) are built from those opcodes, so they are the
same bytes a whole-file `difflib` gave, without its cost: on repetitive code,
its search for the longest matching run grows with the square of the file.

How `difflib` aligns, and how we follow it. It takes the longest run of
equal lines in the two files (the earliest on ties), then does the same on
each side of it, in ever smaller rectangles of old by new lines. Its search
for that run is what costs. But here the candidates are known: the runs of
unchanged lines between the changed blocks, each grown along its own
alignment as far as the lines stay equal (into a block that only inserts or
deletes lines equal to the ones beside it: where such a block "slides"
depends on which neighbour difflib takes first). So `matching_blocks` takes
the longest candidate of each large rectangle, by table lookup, and hands
each rectangle of at most `WINDOW_LINES` lines to difflib itself, which then
also finds what the candidates do not: equal lines inside a changed block,
and a changed line that matches a line of a short run beside it. The cost:
the lines once, a table of the k runs (k log k), and difflib over disjoint
rectangles of at most WINDOW_LINES lines (or over one changed block larger
than that, which only a fix rewriting that many lines makes).

What is not reproduced: a run that difflib would take, in a large rectangle,
across the alignment the edits made: the same lines elsewhere in the file,
longer than the unchanged lines around an edit. Where that happens difflib
matches distant code and deletes and re-adds what lies between; the patch
here shows the lines the edits changed instead. docs/benchmarks.md gives
how often the two agree on generated edits of real files.
"""

from __future__ import annotations

import enum
import re
from bisect import bisect_right
from difflib import SequenceMatcher
from typing import Iterable, NamedTuple, Sequence


WINDOW_LINES = 400  # a rectangle of at most this many old and new lines is aligned by difflib itself


class LineBlock(NamedTuple):
    """Old lines [old_start, old_end) became new lines [new_start, new_end), 0-based; the lines around are equal."""

    old_start: int
    old_end: int
    new_start: int
    new_end: int


class Span(NamedTuple):
    """Old text [old_start, old_end) became new text [new_start, new_end), in character offsets."""

    old_start: int
    old_end: int
    new_start: int
    new_end: int


class Match(NamedTuple):
    """old[old_start:old_start + size] == new[new_start:new_start + size], as difflib's matching blocks."""

    old_start: int
    new_start: int
    size: int


class Tag(enum.StrEnum):
    """What an opcode says of its lines, in difflib's words."""

    EQUAL = "equal"
    REPLACE = "replace"
    DELETE = "delete"
    INSERT = "insert"


class Opcode(NamedTuple):
    """As difflib's opcodes: old[old_start:old_end] is equal to, replaced by, deleted from or inserted as new[...]."""

    tag: Tag
    old_start: int
    old_end: int
    new_start: int
    new_end: int


class LineBreaks(enum.Enum):
    """Where a line ends: the two ways the pipeline counts lines."""

    LF = re.compile(r"\n")  # git's and the patch's: a line ends at LF only
    UNIVERSAL = re.compile(r"\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")  # str.splitlines()

    def starts(self, text: str) -> list[int]:
        """Where each line begins, and len(text) last when the text ends with a line break."""
        return [0] + [match.end() for match in self.value.finditer(text)]


def changed_blocks(old: str, new: str, spans: Sequence[Span], breaks: LineBreaks) -> list[LineBlock]:
    """The blocks of lines that SPANS touch, merged where they touch; every line outside them is unchanged.

    A block is as wide as the spans' lines: lines in it may still be equal
    (`opcodes` trims and aligns them).
    """
    old_starts, new_starts = breaks.starts(old), breaks.starts(new)
    old_count, new_count = _line_count(old, old_starts), _line_count(new, new_starts)
    blocks: list[LineBlock] = []
    for span in spans:
        if breaks is LineBreaks.UNIVERSAL and span.old_start and old[span.old_start - 1] == "\r":
            # the CR before the span ends its line or not by what follows it (CR LF is one break): start a line earlier
            old_first = _line_of(old_starts, span.old_start - 1)
            new_first = _line_of(new_starts, span.new_start - 1)
        else:
            old_first, new_first = _line_of(old_starts, span.old_start), _line_of(new_starts, span.new_start)
        old_last, new_last = _line_of(old_starts, span.old_end), _line_of(new_starts, span.new_end)
        if not (old_starts[old_last] == span.old_end and new_starts[new_last] == span.new_end):
            old_last, new_last = old_last + 1, new_last + 1  # the line the span ends in changed too
        blocks.append(LineBlock(old_first, min(old_last, old_count), new_first, min(new_last, new_count)))
    return _merged(blocks)


def _line_of(starts: list[int], offset: int) -> int:
    return bisect_right(starts, offset) - 1


def _line_count(text: str, starts: list[int]) -> int:
    return len(starts) - 1 if starts[-1] == len(text) else len(starts)


def opcodes(old: Sequence, new: Sequence, blocks: Sequence[LineBlock], window: int = WINDOW_LINES) -> list[Opcode]:
    """difflib's opcodes for OLD -> NEW (lists of lines), knowing that only BLOCKS changed.

    WINDOW: rectangles of at most this many old and new lines go to difflib itself.
    """
    result: list[Opcode] = []
    old_at = new_at = 0
    for match in matching_blocks(old, new, blocks, window) + [Match(len(old), len(new), 0)]:
        if old_at < match.old_start or new_at < match.new_start:
            if old_at < match.old_start and new_at < match.new_start:
                tag = Tag.REPLACE
            else:
                tag = Tag.DELETE if old_at < match.old_start else Tag.INSERT
            result.append(Opcode(tag, old_at, match.old_start, new_at, match.new_start))
        old_at, new_at = match.old_start + match.size, match.new_start + match.size
        if match.size:
            result.append(Opcode(Tag.EQUAL, match.old_start, old_at, match.new_start, new_at))
    return result


def matching_blocks(
    old: Sequence, new: Sequence, blocks: Sequence[LineBlock], window: int = WINDOW_LINES
) -> list[Match]:
    """difflib's matching blocks (without its closing empty one), adjacent ones joined."""
    trimmed = _trimmed(old, new, _merged(blocks))
    if not _consistent(len(old), len(new), trimmed):
        raise ValueError("changed blocks that do not describe the two texts: lines outside them differ in number")
    return _joined(_Alignment(old, new, trimmed).matches(window))


def _merged(blocks: Sequence[LineBlock]) -> list[LineBlock]:
    """Blocks that overlap or touch, as one: no run of equal lines lies between them."""
    result: list[LineBlock] = []
    for block in sorted(blocks):
        if result and block.old_start <= result[-1].old_end:
            last = result.pop()
            block = LineBlock(last.old_start, max(last.old_end, block.old_end),
                              last.new_start, max(last.new_end, block.new_end))
        result.append(block)
    return result


def _trimmed(old: Sequence, new: Sequence, blocks: Sequence[LineBlock]) -> list[LineBlock]:
    """Each block without the equal lines at its two ends; blocks left with no change are dropped."""
    result = []
    for old_start, old_end, new_start, new_end in blocks:
        while old_start < old_end and new_start < new_end and old[old_start] == new[new_start]:
            old_start, new_start = old_start + 1, new_start + 1
        while old_start < old_end and new_start < new_end and old[old_end - 1] == new[new_end - 1]:
            old_end, new_end = old_end - 1, new_end - 1
        if old_start < old_end or new_start < new_end:
            result.append(LineBlock(old_start, old_end, new_start, new_end))
    return result


def _consistent(old_count: int, new_count: int, blocks: list[LineBlock]) -> bool:
    """Blocks in order, apart, and with as many old as new lines between them."""
    old_at = new_at = 0
    for block in blocks:
        if block.old_start - old_at != block.new_start - new_at or block.old_start < old_at:
            return False
        old_at, new_at = block.old_end, block.new_end
    return old_count - old_at == new_count - new_at


def _difflib(old: Sequence, new: Sequence, window: LineBlock) -> list[Match]:
    """difflib's matching blocks between the old and new lines of WINDOW."""
    old_lines, new_lines = old[window.old_start : window.old_end], new[window.new_start : window.new_end]
    matches = SequenceMatcher(None, old_lines, new_lines, autojunk=False).get_matching_blocks()
    return [Match(window.old_start + i, window.new_start + j, size) for i, j, size in matches if size]


def _joined(matches: list[Match]) -> list[Match]:
    result: list[Match] = []
    for match in sorted(matches):
        if result and result[-1].old_start + result[-1].size == match.old_start and (
            result[-1].new_start + result[-1].size == match.new_start
        ):
            last = result.pop()
            match = Match(last.old_start, last.new_start, last.size + match.size)
        result.append(match)
    return result


class _Alignment:
    """difflib's recursion over rectangles of old by new lines, its longest run found among the unchanged runs.

    Run k lies before block k (the last after every block). Each is grown
    along its alignment while the lines stay equal: only into a block that
    slides, since a trimmed block that replaces lines differs at both ends.
    A rectangle's sides are the ends of runs taken before; it holds the runs
    between them, and the longest is the longer of its two end runs (which
    the sides may clip) and the longest of the others, a table lookup
    (`_RangeMinimum`). A grown run can reach into the run two places on
    (a block slides into a short run); when the one the table gives is
    clipped that way, the rectangle's runs are compared one by one. Runs
    out of order (grown past a whole neighbour: long stretches of one
    repeated line) are all compared in every rectangle.
    """

    def __init__(self, old: Sequence, new: Sequence, blocks: list[LineBlock]):
        self.old, self.new = old, new
        self.runs: list[tuple[int, int, int]] = []  # (old start, old end, new - old) of each run, grown
        old_at = new_at = 0
        for block in blocks + [LineBlock(len(old), len(old), len(new), len(new))]:
            self.runs.append(self._grown(old_at, block.old_start, new_at - old_at))
            old_at, new_at = block.old_end, block.new_end

    def _grown(self, start: int, end: int, shift: int) -> tuple[int, int, int]:
        old, new = self.old, self.new
        while start > 0 and start + shift > 0 and old[start - 1] == new[start - 1 + shift]:
            start -= 1
        while end < len(old) and end + shift < len(new) and old[end] == new[end + shift]:
            end += 1
        return start, end, shift

    def matches(self, window: int) -> list[Match]:
        runs = self.runs
        ordered = all(
            start <= start2 and end <= end2 and start + shift <= start2 + shift2 and end + shift <= end2 + shift2
            for (start, end, shift), (start2, end2, shift2) in zip(runs, runs[1:])
        )
        longest = _RangeMinimum([(start - end, start, start + shift) for start, end, shift in runs]) if ordered else None
        found: list[Match] = []
        pending = [(0, len(runs) - 1, LineBlock(0, len(self.old), 0, len(self.new)))]
        while pending:
            first, last, rectangle = pending.pop()
            if rectangle.old_end - rectangle.old_start + rectangle.new_end - rectangle.new_start <= window:
                found += _difflib(self.old, self.new, rectangle)
                continue
            best = self._longest(first, last, rectangle, longest)
            if best is None:  # no unchanged line in it: one large changed block
                found += _difflib(self.old, self.new, rectangle)
                continue
            index, match = best
            found.append(match)
            left, right = ((first, index - 1), (index + 1, last)) if ordered else ((first, last), (first, last))
            if rectangle.old_start < match.old_start and rectangle.new_start < match.new_start:
                pending.append((*left, rectangle._replace(old_end=match.old_start, new_end=match.new_start)))
            old_end, new_end = match.old_start + match.size, match.new_start + match.size
            if old_end < rectangle.old_end and new_end < rectangle.new_end:
                pending.append((*right, rectangle._replace(old_start=old_end, new_start=new_end)))
        return found

    def _longest(self, first: int, last: int, rectangle: LineBlock, longest: "_RangeMinimum | None"):
        """The run (its index, and its match clipped to RECTANGLE) that difflib would take first there, or None."""
        indices: Iterable[int] = range(first, last + 1)
        if longest is not None and last - first >= 2:
            inner = longest.argmin(first + 1, last - 1)
            if self._clipped(inner, rectangle).size == self.runs[inner][1] - self.runs[inner][0]:
                indices = (first, inner, last)
        elif longest is not None:
            indices = (first, last) if first <= last else ()
        best = None
        for index in indices:
            match = self._clipped(index, rectangle)
            if match.size > 0 and (best is None or (-match.size, match.old_start, match.new_start) < best[0]):
                best = ((-match.size, match.old_start, match.new_start), index, match)
        return best[1:] if best else None

    def _clipped(self, index: int, rectangle: LineBlock) -> Match:
        start, end, shift = self.runs[index]
        start = max(start, rectangle.old_start, rectangle.new_start - shift)
        end = min(end, rectangle.old_end, rectangle.new_end - shift)
        return Match(start, start + shift, max(0, end - start))


class _RangeMinimum:
    """The index of the smallest key in any range of a fixed list, in constant time (a sparse table)."""

    def __init__(self, keys: list[tuple]):
        self.keys = keys
        self.table = [list(range(len(keys)))]
        width = 1
        while 2 * width <= len(keys):
            below = self.table[-1]
            self.table.append([min(below[i], below[i + width], key=keys.__getitem__)
                               for i in range(len(keys) - 2 * width + 1)])
            width *= 2

    def argmin(self, first: int, last: int) -> int:
        level = (last - first + 1).bit_length() - 1
        row = self.table[level]
        return min(row[first], row[last - (1 << level) + 1], key=self.keys.__getitem__)
