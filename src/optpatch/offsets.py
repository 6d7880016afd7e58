"""Positions across passes: where an offset of one pass's text lies in another's.

A file may be rewritten in several passes (passes.py): a fix held back
because it overlapped another is re-derived from the rewritten text. Each
pass's edits refer to the text before that pass. These functions carry
offsets and lines forward and back through the passes, so that every
finding reports a position in the file as the user has it, and the safety
net knows which lines of the final text the edits wrote.
"""

from __future__ import annotations

import difflib
from typing import Callable

from optpatch.model import Edit, Finding, Region
from optpatch.source import SourceFile

Passes = list[list[Edit]]  # each pass's applied edits, in pass order


def locator(original: SourceFile, current: SourceFile, applied: Passes) -> Callable[[int, int], tuple[int, int]]:
    """Maps (line, col) in the current text to (line, col) in the original, through the edits applied."""

    def locate(line: int, col: int) -> tuple[int, int]:
        offset = current.offset(line, col - 1)
        for edits in reversed(applied):
            offset = offset_before(offset, edits)
        return original.position(offset)

    return locate


def offset_before(offset: int, edits: list[Edit]) -> int:
    """Where an offset of the edited text was before `edits`; inside new text, the edit's start."""
    delta = 0
    for edit in sorted(edits):
        start = edit.start + delta
        if offset < start:
            break
        if offset < start + len(edit.text):
            return edit.start
        delta += len(edit.text) - (edit.end - edit.start)
    return offset - delta


def offset_after(offset: int, edits: list[Edit]) -> int:
    """Where an offset of the text before `edits` lies after them; inside replaced text, the replacement's start."""
    delta = 0
    for edit in sorted(edits):
        if offset < edit.start:
            break
        if offset < edit.end:
            return edit.start + delta
        delta += len(edit.text) - (edit.end - edit.start)
    return offset + delta


def written_lines(final: SourceFile, applied: Passes) -> set[int]:
    """The lines of the final text that the edits of every pass wrote, carried through the passes after it.

    An edit that only deletes marks the lines on both sides of where its text was.
    """
    lines: set[int] = set()
    for step, edits in enumerate(applied):
        delta = 0
        for edit in sorted(edits):
            start = edit.start + delta
            end = start + len(edit.text)
            delta += len(edit.text) - (edit.end - edit.start)
            for later in applied[step + 1 :]:
                start, end = offset_after(start, later), offset_after(end, later)
            first, last = final.position(start)[0], final.position(end)[0]
            lines.update(range(first - 1 if start == end else first, last + 1))
    return lines


def original_line(offset: int, applied: Passes, passes: int, original: SourceFile) -> int:
    """The original line of an offset into the text that `passes` passes produced."""
    for edits in reversed(applied[:passes]):
        offset = offset_before(offset, edits)
    return original.position(offset)[0]


def relocate_to_original(findings: list[Finding], original: SourceFile, final_text: str, applied: Passes) -> None:
    """Give fixes applied over several passes regions of the ORIGINAL text (SARIF, suggestions).

    A later pass's edits refer to text an earlier pass rewrote, and may rewrite
    what an earlier fix inserted (OPT202 over OPT201's `.data()`). So the
    changed lines of the whole file are attributed to fixes instead: each
    block of changed lines goes to the latest fix that touches it, and applying
    every applied fix's regions gives exactly the rewritten file.
    """
    old_lines = original.text.splitlines(keepends=True)
    new_lines = final_text.splitlines(keepends=True)
    touched: list[tuple[int, int, Finding]] = []  # (pass, original line, finding)
    for finding in findings:
        if finding.applied:
            for edit in finding.edits:
                touched.append((finding.analysis_pass, original_line(edit.start, applied, finding.analysis_pass, original), finding))
    owners: dict[int, list[Region]] = {}
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in _line_blocks(matcher.get_opcodes()):
        if tag == "equal":
            continue
        # 1-based lines of the block; an insertion also belongs to the line it follows
        lines = range(i1 + 1, i2 + 1) if i2 > i1 else range(i1, i1 + 2)
        claimants = [(step, finding) for step, line, finding in touched if line in lines]
        if not claimants:
            continue
        owner = max(claimants, key=lambda c: (c[0], c[1].sort_key))[1]
        region = Region(i1 + 1, 1, i2 + 1, 1, "".join(new_lines[j1:j2]))
        owners.setdefault(id(owner), []).append(region)
    for finding in findings:
        if finding.applied:
            finding.regions = tuple(owners.get(id(finding), ()))


def _line_blocks(opcodes):
    """Opcodes, with a replacement of N lines by N lines split line by line (one fix per line, usually)."""
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "replace" and i2 - i1 == j2 - j1:
            for k in range(i2 - i1):
                yield tag, i1 + k, i1 + k + 1, j1 + k, j1 + k + 1
        else:
            yield tag, i1, i2, j1, j2
