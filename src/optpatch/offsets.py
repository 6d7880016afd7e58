"""Positions across passes: where an offset of one pass's text lies in another's.

A file may be rewritten in several passes (passes.py): a fix held back
because it overlapped another is re-derived from the rewritten text. Each
pass's edits refer to the text before that pass. These functions carry
offsets and lines forward and back through the passes, so that every
finding reports a position in the file as the user has it, the safety net
knows which lines of the final text the edits wrote, and the patch which
spans of the file changed (`composed_spans`, aligned in line_diff.py).
Each pass's edits are sorted once (`PassEdits`): an offset crosses a pass
by bisection, so the cost grows with the edits times their logarithm.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import replace
from typing import Callable

from optpatch.line_diff import LineBlock, LineBreaks, Span, Tag, changed_blocks, opcodes
from optpatch.model import Decided, Edit, Finding, Region
from optpatch.source import SourceFile

Passes = list[list[Edit]]  # each pass's applied edits, in pass order


def locator(original: SourceFile, current: SourceFile, applied: Passes) -> Callable[[int, int], tuple[int, int]]:
    """Maps (line, col) in the current text to (line, col) in the original, through the edits applied."""
    maps = [PassEdits(edits) for edits in reversed(applied)]

    def locate(line: int, col: int) -> tuple[int, int]:
        offset = current.offset(line, col - 1)
        for edits in maps:
            offset = edits.before(offset)
        return original.position(offset)

    return locate


class PassEdits:
    """One pass's edits, sorted, with where each lands in the edited text: offsets map across them by bisection."""

    def __init__(self, edits: list[Edit]):
        self.edits = sorted(edits)
        self.starts = [edit.start for edit in self.edits]
        self.new_starts: list[int] = []  # where each edit's text begins in the edited text
        self.shifts: list[int] = []  # how much longer the edited text is after each edit
        shift = 0
        for edit in self.edits:
            self.new_starts.append(edit.start + shift)
            shift += len(edit.text) - (edit.end - edit.start)
            self.shifts.append(shift)

    def before(self, offset: int) -> int:
        """Where an offset of the edited text was before the edits; inside new text, the edit's start."""
        index = bisect_right(self.new_starts, offset) - 1
        if index < 0:
            return offset
        edit = self.edits[index]
        if offset < self.new_starts[index] + len(edit.text):
            return edit.start
        return offset - self.shifts[index]

    def after(self, offset: int) -> int:
        """Where an offset of the text before the edits lies after them; inside replaced text, the replacement's start."""
        index = bisect_right(self.starts, offset) - 1
        if index < 0:
            return offset
        if offset < self.edits[index].end:
            return self.new_starts[index]
        return offset + self.shifts[index]


def composed_spans(applied: Passes) -> list[Span]:
    """What the passes changed, as spans of the original text and what each became in the final text.

    Outside the spans, the final text is the original, shifted. Edits of a
    later pass that overlap or touch a span grow it; one pass over the spans
    and edits, in order, for each pass.
    """
    spans: list[Span] = []
    for edits in applied:
        spans = _compose(spans, sorted(edits))
    return spans


def _compose(spans: list[Span], edits: list[Edit]) -> list[Span]:
    """SPANS (original -> current text) followed by EDITS (of the current text): spans original -> next text.

    Spans and edits are laid out on the current text and joined where they
    overlap or touch; each group becomes one span, mapped back to the
    original through the spans before it and forward through the edits
    before it.
    """
    pieces = sorted([(span.new_start, span.new_end, span, None) for span in spans]
                    + [(edit.start, edit.end, None, edit) for edit in edits], key=lambda piece: piece[:2])
    result: list[Span] = []
    back = forward = 0  # how much longer the current text is than the original, and the next than the current, so far
    index = 0
    while index < len(pieces):
        start, end = pieces[index][0], pieces[index][1]
        group = [pieces[index]]
        index += 1
        while index < len(pieces) and pieces[index][0] <= end:
            end = max(end, pieces[index][1])
            group.append(pieces[index])
            index += 1
        old_start, new_start = start - back, start + forward
        for _, _, span, edit in group:
            if span is not None:
                back += (span.new_end - span.new_start) - (span.old_end - span.old_start)
            else:
                forward += len(edit.text) - (edit.end - edit.start)
        result.append(Span(old_start, end - back, new_start, end + forward))
    return result


def changed_lines(original: str, final: str, applied: Passes, breaks: LineBreaks) -> list[LineBlock]:
    """The blocks of lines that the passes changed (line_diff.changed_blocks over `composed_spans`)."""
    return changed_blocks(original, final, composed_spans(applied), breaks)


def written_lines(final: SourceFile, applied: Passes) -> set[int]:
    """The lines of the final text that the edits of every pass wrote, carried through the passes after it.

    An edit that only deletes marks the lines on both sides of where its text was.
    """
    maps = [PassEdits(edits) for edits in applied]
    lines: set[int] = set()
    for step, edits in enumerate(maps):
        for edit, new_start in zip(edits.edits, edits.new_starts):
            start, end = new_start, new_start + len(edit.text)
            for later in maps[step + 1 :]:
                start, end = later.after(start), later.after(end)
            first, last = final.position(start)[0], final.position(end)[0]
            lines.update(range(first - 1 if start == end else first, last + 1))
    return lines


def relocate_to_original(decided: list[Decided], original: SourceFile, final_text: str, applied: Passes) -> list[Decided]:
    """The findings, with the fixes applied over several passes given regions of the ORIGINAL text (SARIF, suggestions).

    A later pass's edits refer to text an earlier pass rewrote, and may rewrite
    what an earlier fix inserted (OPT202 over OPT201's `.data()`). So the
    changed lines of the whole file are attributed to fixes instead: each
    block of changed lines goes to the latest fix that touches it, and applying
    every applied fix's regions gives exactly the rewritten file. The blocks
    are the line diff of the two texts, found from the edits (line_diff.py).
    """
    old_lines = original.text.splitlines(keepends=True)
    new_lines = final_text.splitlines(keepends=True)
    maps = [PassEdits(edits) for edits in applied]
    claims: dict[int, list[tuple[int, int, Finding]]] = {}  # original line -> (pass, index, finding) of fixes editing it
    for index, (finding, decision) in enumerate(decided):
        if decision.accepted:
            for edit in finding.fix.edits:
                offset = edit.start
                for earlier in reversed(maps[: finding.analysis_pass]):
                    offset = earlier.before(offset)
                claims.setdefault(original.position(offset)[0], []).append((finding.analysis_pass, index, finding))
    owners: dict[int, list[Region]] = {}  # index in DECIDED -> regions
    blocks = changed_lines(original.text, final_text, applied, LineBreaks.UNIVERSAL)
    for tag, i1, i2, j1, j2 in _line_blocks(opcodes(old_lines, new_lines, blocks)):
        if tag is Tag.EQUAL:
            continue
        # 1-based lines of the block; an insertion also belongs to the line it follows
        lines = range(i1 + 1, i2 + 1) if i2 > i1 else range(i1, i1 + 2)
        claimants = [claim for line in lines for claim in claims.get(line, ())]
        if not claimants:
            continue
        owner = max(claimants, key=lambda c: (c[0], c[2].sort_key))[1]
        region = Region(i1 + 1, 1, i2 + 1, 1, "".join(new_lines[j1:j2]))
        owners.setdefault(owner, []).append(region)
    return [Decided(replace(finding, regions=tuple(owners.get(index, ()))), decision) if decision.accepted
            else Decided(finding, decision) for index, (finding, decision) in enumerate(decided)]


def _line_blocks(opcodes):
    """Opcodes, with a replacement of N lines by N lines split line by line (one fix per line, usually)."""
    for tag, i1, i2, j1, j2 in opcodes:
        if tag is Tag.REPLACE and i2 - i1 == j2 - j1:
            for k in range(i2 - i1):
                yield tag, i1 + k, i1 + k + 1, j1 + k, j1 + k + 1
        else:
            yield tag, i1, i2, j1, j2
